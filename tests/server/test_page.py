"""The chat page in a real browser: Debian's chromium, driven by Selenium through
chromedriver (both given by path, so nothing is downloaded), against a real ``lmc serve``
app with the tiny model replaying."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.wait import WebDriverWait
from support.server_testing import TOKEN, Served, code, final
from support.speech import speak

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WAIT = 120  # seconds: the shared CI cores start a kernel slowly

THINK = "<|channel|>analysis<|message|>The person declined.<|end|><|start|>assistant"
WRITE = "open('ran.txt', 'w').write('ran')\nprint('ran it')"


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[WebDriver]:
    yield from _browser(tmp_path, [])


def _browser(tmp_path: Path, extra: list[str]) -> Generator[WebDriver, None, None]:
    for path in (CHROMIUM, CHROMEDRIVER):
        assert shutil.which(path), f"{path} is missing: apt-get install chromium chromium-driver"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1200,900",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        *extra,
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=CHROMEDRIVER, log_output=str(tmp_path / "chromedriver.log"))
    driver = webdriver.Chrome(service=service, options=options)
    try:
        yield driver
    finally:
        driver.quit()


def policy_violations(driver: WebDriver) -> list[str]:
    """What the page's Content-Security-Policy refused (chromium logs each refusal)."""
    assert isinstance(driver, webdriver.Chrome)  # the browser log is chromium's
    return [
        e["message"] for e in driver.get_log("browser") if "Content Security Policy" in e["message"]
    ]


def send(driver: WebDriver, text: str) -> None:
    wait = WebDriverWait(driver, WAIT)
    wait.until(ec.element_to_be_clickable((By.ID, "send")))
    driver.find_element(By.ID, "input").send_keys(text)
    driver.find_element(By.ID, "send").click()


def test_decline_then_run_in_the_browser(
    serve: Callable[..., Served], browser: WebDriver, tmp_path: Path
) -> None:
    served = serve(
        code(WRITE),
        THINK + final("Fine, **nothing** ran."),
        code(WRITE),
        final("Done: `ran.txt` is written."),
    )
    wait = WebDriverWait(browser, WAIT)
    browser.get(f"{served.live.http}/?token={TOKEN}")
    assert "token" not in browser.current_url  # the token leaves the address bar

    send(browser, "write ran.txt")
    decline = wait.until(ec.element_to_be_clickable((By.CSS_SELECTOR, ".actions .decline")))
    block = browser.find_element(By.CSS_SELECTOR, ".block pre")
    assert "open('ran.txt'" in block.text
    assert block.find_elements(By.CSS_SELECTOR, ".tok-str")  # highlighted
    # The page says it waits for the person, and already lists the new conversation.
    assert "waiting for you" in browser.find_element(By.ID, "status").text
    assert "waiting" in (browser.find_element(By.TAG_NAME, "body").get_attribute("class") or "")
    assert browser.title.startswith("(waiting for you)")
    wait.until(
        lambda d: (
            [e.text for e in d.find_elements(By.CSS_SELECTOR, "#conversations li")]
            == ["write ran.txt"]
        )
    )
    decline.click()
    wait.until(lambda d: "waiting for you" not in d.find_element(By.ID, "status").text)
    wait.until(ec.text_to_be_present_in_element((By.ID, "log"), "nothing ran."))
    strong = browser.find_element(By.CSS_SELECTOR, ".msg.assistant strong")
    assert strong.text == "nothing"  # Markdown rendered
    reasoning = browser.find_element(By.CSS_SELECTOR, "details.reasoning")
    assert reasoning.get_attribute("open") is None  # folded
    assert not reasoning.find_element(By.TAG_NAME, "div").is_displayed()
    assert not (tmp_path / "ran.txt").exists()
    shown = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".output")]
    assert shown == ["The user declined to run this code."]

    send(browser, "now write it")
    run = wait.until(ec.element_to_be_clickable((By.CSS_SELECTOR, ".actions .run")))
    run.click()
    # (the last code block's output; the answer after it may already be there too)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".block .output")[-1].text == "ran it")
    wait.until(ec.text_to_be_present_in_element((By.ID, "log"), "is written."))
    assert (tmp_path / "ran.txt").read_text() == "ran"
    assert browser.find_element(By.CSS_SELECTOR, ".msg.assistant:last-child code").text == "ran.txt"

    # The stored conversation is in the side panel, and the URL names it.
    item = wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#conversations li")))
    assert item.text == "write ran.txt"
    assert "conversation=" in browser.current_url
    assert not policy_violations(browser)
    screenshot = tmp_path / "chat-page.png"
    browser.save_screenshot(str(screenshot))
    assert screenshot.stat().st_size > 10_000

    # Reloaded, the page shows the stored conversation again (it resumes it).
    browser.refresh()
    wait.until(ec.text_to_be_present_in_element((By.ID, "log"), "is written."))
    assert [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".msg.user")] == [
        "write ran.txt",
        "now write it",
    ]


# Run in the page before it asks for the microphone: the stream getUserMedia gives the page
# also feeds a counter of the samples it carried (the audio's own clock, not the wall's) and of
# the loud ones among them. The page's MediaRecorder records that same stream.
LISTEN = """
const ask = navigator.mediaDevices.getUserMedia.bind(navigator.mediaDevices);
window.heard = { samples: 0, loud: 0, rate: 0 };
navigator.mediaDevices.getUserMedia = async (constraints) => {
  const stream = await ask(constraints);
  const context = new AudioContext();
  const counter = context.createScriptProcessor(4096, 1, 1);
  counter.onaudioprocess = (event) => {
    const samples = event.inputBuffer.getChannelData(0);
    window.heard.rate = context.sampleRate;
    window.heard.samples += samples.length;
    window.heard.loud += samples.filter((x) => Math.abs(x) > 0.05).length;
  };
  context.createMediaStreamSource(stream).connect(counter);
  counter.connect(context.destination);
  await context.resume();
  return stream;
};
"""
# True once the stream has carried arguments[0] seconds of audio, some of it loud.
HEARD = (
    "const h = window.heard; return h.rate > 0 && h.loud > 0 && h.samples >= arguments[0] * h.rate;"
)


def test_the_record_button_sends_speech_that_is_heard_and_answered(
    serve: Callable[..., Served], whisper_model_dir: Path, tmp_path: Path
) -> None:
    """Chromium's fake microphone plays an espeak-ng sentence once; the page records it with
    MediaRecorder, converts it to wav and sends it; faster-whisper hears it."""
    wav = tmp_path / "question.wav"
    speak("What is seventeen plus twenty five", wav)
    seconds = (len(wav.read_bytes()) - 44) / (22_050 * 2)  # espeak-ng: 22.05 kHz, 16-bit mono
    served = serve(final("It is 42."), stt_model=str(whisper_model_dir))
    fake_microphone = [
        "--use-fake-ui-for-media-stream",
        "--use-fake-device-for-media-stream",
        f"--use-file-for-fake-audio-capture={wav}%noloop",
        "--autoplay-policy=no-user-gesture-required",  # the listener's AudioContext runs
    ]
    browser = next(driver := _browser(tmp_path, fake_microphone))
    try:
        wait = WebDriverWait(browser, WAIT)
        browser.get(f"{served.live.http}/?token={TOKEN}")
        wait.until(ec.element_to_be_clickable((By.ID, "send")))
        browser.execute_script(LISTEN)
        browser.find_element(By.ID, "record").click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "record"), "Stop recording"))
        # The fake microphone plays the file in real time: stop once the stream the page
        # records has carried all of it and a second of the silence after it.
        wait.until(lambda d: d.execute_script(HEARD, seconds + 1.0))
        browser.find_element(By.ID, "record").click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "log"), "It is 42."))
        [heard] = [e.text.lower() for e in browser.find_elements(By.CSS_SELECTOR, ".msg.user")]
        assert "17" in heard or "seventeen" in heard, heard
        assert "25" in heard or "twenty" in heard, heard
        browser.save_screenshot(str(tmp_path / "voice-page.png"))
    finally:
        driver.close()


PIXEL = (  # a 1x1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
LIVE = (
    "import base64, time\n"
    "from IPython.display import Image, display\n"
    f"display(Image(data=base64.b64decode('{PIXEL}')))\n"
    "print('waiting', flush=True)\n"
    "time.sleep(600)\n"
    "print('finished')"
)


def test_live_output_active_line_image_and_the_stop_button(
    serve: Callable[..., Served], browser: WebDriver
) -> None:
    served = serve(code(LIVE), auto_run=True, max_steps=1)
    wait = WebDriverWait(browser, WAIT)
    browser.get(f"{served.live.http}/?token={TOKEN}")
    send(browser, "show me a pixel, then wait")
    wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, ".block .output"), "waiting"))
    image = wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".block img.inline")))
    assert image.get_attribute("src") == f"data:image/png;base64,{PIXEL}"
    # The line running now (time.sleep) is marked while it runs.
    active = wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".line.active")))
    assert active.get_attribute("data-line") == "5" and "time.sleep" in active.text
    stop = browser.find_element(By.ID, "stop")
    assert stop.is_enabled()
    stop.click()
    wait.until(ec.element_to_be_clickable((By.ID, "send")))  # the turn is complete
    output = browser.find_element(By.CSS_SELECTOR, ".block .output").text
    assert "KeyboardInterrupt" in output and "finished" not in output
    assert not browser.find_elements(By.CSS_SELECTOR, ".line.active")
    assert not policy_violations(browser)  # the inline image is allowed


def test_a_block_handed_back_shows_as_a_job_live_and_stored(
    serve: Callable[..., Served], browser: WebDriver
) -> None:
    served = serve(
        code("import time\nwhile True: time.sleep(0.05)"),
        final("It runs on as job 1."),
        auto_run=True,
        block_timeout=1,
    )
    wait = WebDriverWait(browser, WAIT)
    browser.get(f"{served.live.http}/?token={TOKEN}")
    send(browser, "run it for ever")
    wait.until(ec.text_to_be_present_in_element((By.ID, "log"), "It runs on as job 1."))
    said = "job 1 (python) runs on in the background after 1 s"
    assert browser.find_element(By.CSS_SELECTOR, ".note.job").text == said
    browser.refresh()  # the stored conversation shows it again
    wait.until(ec.text_to_be_present_in_element((By.ID, "log"), "It runs on as job 1."))
    assert [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".note.job")] == [said]
    assert not policy_violations(browser)
