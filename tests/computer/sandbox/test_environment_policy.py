"""lmc's own environment (API keys, tokens) never reaches sandboxed code, in any language;
a name listed in ``sandbox.env`` does, a credential only by its exact name. The same code
unsandboxed sees every one of them, so each test can fail."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from support.sandbox_testing import LANGUAGES, Place, output_of

from lmc.computer import Computer
from lmc.computer.sandbox.env import looks_like_credential, sandbox_env

SECRETS = {
    "OPENAI_API_KEY": "sk-lmc-test-openai",
    "GITHUB_TOKEN": "ghp-lmc-test-github",
    "AWS_SECRET_ACCESS_KEY": "aws-lmc-test-secret",
    "HF_TOKEN": "hf-lmc-test-token",
    "LMC_SERVER_TOKEN": "lmc-test-server-token",
}
_REQUIRES = {"shell": "bash", "javascript": "node", "r": "R"}


def env_code(language: str) -> str:
    """Code that prints every environment variable as NAME=value."""
    return {
        "python": "import os\nfor k, v in os.environ.items(): print(f'{k}={v}')",
        "shell": "env",
        "javascript": "for (const [k, v] of Object.entries(process.env)) console.log(`${k}=${v}`)",
        "r": "e <- Sys.getenv(); cat(paste0(names(e), '=', e), sep = '\\n')",
    }[language]


@pytest.fixture(scope="module")
def computers(place: Place) -> Iterator[dict[str, Computer]]:
    with pytest.MonkeyPatch.context() as patch:
        for name, value in {**SECRETS, "LMC_TEST_PLAIN": "plain-value"}.items():
            patch.setenv(name, value)
        made = {
            "contained": Computer(sandbox="workspace", workdir=place.work),
            "listed": Computer(
                sandbox="workspace",
                workdir=place.work,
                sandbox_env=("HF_TOKEN", "LMC_TEST_*", "*_KEY"),
            ),
            "off": Computer(sandbox="off", workdir=place.work),
        }
        for computer in made.values():  # kernels read the environment when they start
            computer.prestart(LANGUAGES)
        try:
            yield made
        finally:
            for computer in made.values():
                computer.close()


@pytest.mark.parametrize("language", LANGUAGES)
def test_no_secret_of_lmcs_environment_reaches_the_code(
    language: str, computers: dict[str, Computer]
) -> None:
    needed = _REQUIRES.get(language)
    if needed is not None and shutil.which(needed) is None:
        pytest.skip(f"{needed} is not installed")
    inside = output_of(computers["contained"], language, env_code(language))
    assert "HOME=" in inside and "PATH=" in inside, inside
    for value in SECRETS.values():
        assert value not in inside
    assert "plain-value" not in inside  # not on the allow-list, not listed
    listed = output_of(computers["listed"], language, env_code(language))
    assert "HF_TOKEN=hf-lmc-test-token" in listed  # a credential listed by its exact name
    assert "LMC_TEST_PLAIN=plain-value" in listed  # a glob lets an ordinary name through
    assert "sk-lmc-test-openai" not in listed  # but never a credential (*_KEY)
    outside = output_of(computers["off"], language, env_code(language))
    for value in SECRETS.values():
        assert value in outside


def test_the_filter_itself() -> None:
    assert looks_like_credential("MY_PASSWORD") and looks_like_credential("api_key")
    assert not looks_like_credential("LANG")
    env = {"LC_ALL": "C", "LC_TOKEN": "x", "FOO": "1", "DB_PASSWORD": "p"}
    assert sandbox_env(env) == {"LC_ALL": "C"}
    assert sandbox_env(env, listed=("FOO", "DB_PASSWORD")) == {
        "LC_ALL": "C",
        "FOO": "1",
        "DB_PASSWORD": "p",
    }
    assert sandbox_env(env, listed=("*",)) == {"LC_ALL": "C", "FOO": "1"}
