// The chat page: one websocket to lmc serve, speaking Open Interpreter's protocol.
// Chunks arrive as LMC start/content/end triples; each kind is drawn by one small function.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const log = $("log");
  const input = $("input");
  const sendButton = $("send");
  const stopButton = $("stop");
  const recordButton = $("record");
  const statusLine = $("status");

  const params = new URLSearchParams(location.search);
  const hash = new URLSearchParams(location.hash.slice(1));
  const token = params.get("token") || hash.get("token") || sessionStorage.getItem("lmc-token") || "";
  sessionStorage.setItem("lmc-token", token);
  let conversation = params.get("conversation");
  let ws = null;
  let busy = false;
  let ready = false;
  let current = null; // the message being streamed: {kind, el, text}
  let lastBlock = null; // the last code block: {el, pre, code, language, output}
  let recorder = null;
  let renderPending = false;

  function setUrl() {
    const url = new URL(location.href);
    url.search = conversation ? "?conversation=" + encodeURIComponent(conversation) : "";
    url.hash = "";
    history.replaceState(null, "", url);
  }
  setUrl(); // the token leaves the address bar (it stays in this tab's sessionStorage)

  function status(text) { statusLine.textContent = text; }

  // A code block waits for the person: say so where they look (status, title, a class on body).
  function waitingForYou(waiting) {
    document.body.classList.toggle("waiting", waiting);
    document.title = waiting ? "(waiting for you) lmc" : "lmc";
    if (waiting) status("waiting for you: run or decline the code above");
    else if (statusLine.textContent.startsWith("waiting for you")) status("");
  }

  function setBusy(value) {
    busy = value;
    sendButton.disabled = !ready || busy;
    stopButton.disabled = !busy;
  }

  function scroll() { log.scrollTop = log.scrollHeight; }

  function add(className, html) {
    const el = document.createElement("div");
    el.className = "msg " + className;
    if (html !== undefined) el.innerHTML = html;
    log.appendChild(el);
    scroll();
    return el;
  }

  function send(obj) {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(obj));
  }

  // -- drawing chunks ---------------------------------------------------------------------

  function renderCurrent() {
    renderPending = false;
    if (!current || current.kind === "console") return;
    if (current.kind === "message") current.el.innerHTML = Markdown.render(current.text);
    else if (current.kind === "code") current.pre.innerHTML = Highlight.html(current.text, current.language, true);
    else current.body.textContent = current.text;
    scroll();
  }

  function scheduleRender() {
    if (!renderPending) { renderPending = true; requestAnimationFrame(renderCurrent); }
  }

  function begin(chunk) {
    const kind = chunk.type;
    if (chunk.role === "assistant" && kind === "message") {
      current = { kind: "message", el: add("assistant"), text: "" };
    } else if (chunk.role === "assistant" && kind === "reasoning") {
      const el = add("reasoning-wrap");
      el.innerHTML = '<details class="reasoning"><summary>Reasoning</summary><div></div></details>';
      current = { kind: "reasoning", el, body: el.querySelector("div"), text: "" };
    } else if (chunk.role === "assistant" && (kind === "code" || kind === "tool_call")) {
      // a tool call (an MCP tool, browser.search) shows as a block: its name, its JSON arguments
      const el = add(kind === "code" ? "block" : "block tool-call");
      el.innerHTML = '<div class="lang"></div><pre class="code"></pre><div class="output"></div>';
      el.querySelector(".lang").textContent = chunk.format || "code";
      const language = kind === "code" ? chunk.format : "json";
      current = { kind: "code", el, pre: el.querySelector("pre"), language, text: "" };
      lastBlock = { el, pre: current.pre, output: el.querySelector(".output") };
    } else if (chunk.role === "computer" && kind === "console") {
      if (!lastBlock) {
        const el = add("block");
        el.innerHTML = '<div class="output"></div>';
        lastBlock = { el, pre: null, output: el.querySelector(".output") };
      }
      removeActions();
      current = { kind: "console" };
    } else {
      // a note from lmc (computer message) or what the person said (a voice transcript)
      const className = chunk.role === "user" ? "user" : "note";
      const el = add(className);
      current = { kind: "text", el, body: el, text: "" };
    }
  }

  function content(chunk) {
    if (chunk.role === "computer" && chunk.type === "console") return consoleChunk(chunk);
    if (chunk.role === "computer" && chunk.type === "confirmation") return confirmation();
    if (chunk.type === "image") return image(chunk);
    if (chunk.role === "computer" && chunk.type === "code" && chunk.format === "html") return htmlOutput(chunk.content);
    if (!current) begin(chunk);
    current.text += typeof chunk.content === "string" ? chunk.content : JSON.stringify(chunk.content);
    scheduleRender();
  }

  function finish() {
    renderCurrent();
    if (current && current.kind === "console") markActive(null);
    current = null;
  }

  function consoleChunk(chunk) {
    if (!lastBlock) begin({ role: "computer", type: "console", start: true });
    if (chunk.format === "active_line") return markActive(chunk.content);
    // A running MCP call's progress: a live status line, not output.
    if (chunk.format === "progress") return lastBlock.output.setAttribute("data-progress", chunk.content);
    lastBlock.output.textContent += chunk.content;
    lastBlock.output.scrollTop = lastBlock.output.scrollHeight;
    scroll();
  }

  function markActive(line) {
    if (!lastBlock || !lastBlock.pre) return;
    for (const el of lastBlock.pre.querySelectorAll(".line.active")) el.classList.remove("active");
    if (line === null || line === undefined) return;
    const el = lastBlock.pre.querySelector(`.line[data-line="${Number(line)}"]`);
    if (el) el.classList.add("active");
  }

  function confirmation() {
    if (!lastBlock || lastBlock.el.querySelector(".actions")) return;
    waitingForYou(true);
    const actions = document.createElement("div");
    actions.className = "actions";
    actions.innerHTML = '<button type="button" class="run">Run</button><button type="button" class="decline">Decline</button>';
    actions.querySelector(".run").onclick = () => { removeActions(); send({ role: "user", type: "command", content: "go" }); };
    actions.querySelector(".decline").onclick = () => {
      removeActions(); // the server answers with the block's output: declined, not run
      send({ role: "user", type: "command", content: "decline" });
    };
    lastBlock.el.appendChild(actions);
    scroll();
  }

  function removeActions() {
    for (const el of log.querySelectorAll(".actions")) el.remove();
    waitingForYou(false);
  }

  function image(chunk) {
    if (chunk.format === "path") { add("note").textContent = "image: " + chunk.content; return; }
    const img = document.createElement("img");
    img.className = "inline";
    const type = chunk.format === "base64.jpeg" ? "jpeg" : "png";
    img.src = `data:image/${type};base64,${chunk.content}`;
    (lastBlock ? lastBlock.el : add("assistant")).appendChild(img);
    scroll();
  }

  // A name the code chose, drawn on its one line: controls as ^J, bidi and zero-width
  // characters as <U+202E> (as lmc.messages.sanitize.name_for_terminal draws it), so that a
  // line feed in a file name cannot paint an entry of its own.
  const UNSAFE_IN_NAME = /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;
  function visibleName(name) {
    return String(name).replace(UNSAFE_IN_NAME, (ch) => {
      const code = ch.charCodeAt(0);
      if (code < 0x20) return "^" + String.fromCharCode(code + 0x40);
      if (code === 0x7f) return "^?";
      return "<U+" + code.toString(16).toUpperCase().padStart(4, "0") + ">";
    });
  }

  function files(changes) {
    // the files a block changed: one line each, "modified  a.py  +3 -1"
    const line = (c) => `  ${c.change}  ${visibleName(c.path)}  ${c.added === null ? "binary" : `+${c.added} -${c.removed}`}`;
    add("note files").textContent = ["files changed", ...changes.map(line)].join("\n");
    scroll();
  }

  function handedBack(job) {
    // a block handed back as a background job ("job" chunk); the output's note says the rest
    const input = job.input ? "; it takes input" : "";
    add("note job").textContent = `job ${job.job} (${job.language}) runs on in the background after ${job.after} s${input}`;
    scroll();
  }

  function htmlOutput(html) {
    const frame = document.createElement("iframe");
    frame.className = "html";
    frame.setAttribute("sandbox", "");
    frame.srcdoc = html;
    (lastBlock ? lastBlock.el : add("assistant")).appendChild(frame);
  }

  function server(chunk) {
    if (chunk.type === "status" && chunk.content === "complete") {
      finish();
      removeActions();
      lastBlock = null;
      setBusy(false);
      status("");
      loadConversations();
    } else if (chunk.type === "status" && chunk.content === "queued") {
      status("queued: waiting for the model or a free kernel, used by another conversation…");
    } else if (chunk.type === "error") {
      add("error").textContent = chunk.content;
    } else if (chunk.type === "conversation") {
      conversation = chunk.content;
      setUrl();
      loadConversations();
    }
  }

  function onChunk(chunk) {
    if ("auth" in chunk) {
      if (chunk.auth === true) {
        ready = true;
        setBusy(false);
        status("");
      } else {
        status("the token was refused: open the URL `lmc serve` printed");
      }
      return;
    }
    if (chunk.role === "server") return server(chunk);
    if (busy && statusLine.textContent.startsWith("queued")) status("");
    if (chunk.type === "files") return chunk.start || chunk.end ? undefined : files(chunk.content);
    if (chunk.type === "job") return chunk.start || chunk.end ? undefined : handedBack(chunk.content);
    if (chunk.start) return begin(chunk);
    if (chunk.end) return finish(chunk);
    content(chunk);
  }

  // -- the connection ---------------------------------------------------------------------

  function connect() {
    if (ws) { ws.onclose = null; ws.close(); }
    ready = false;
    setBusy(false);
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const query = conversation ? "?conversation=" + encodeURIComponent(conversation) : "";
    const socket = new WebSocket(`${scheme}//${location.host}/${query}`);
    ws = socket;
    socket.onopen = () => socket.send(JSON.stringify({ auth: token }));
    socket.onmessage = (event) => onChunk(JSON.parse(event.data));
    socket.onclose = (event) => {
      if (ws !== socket) return;
      ready = false;
      setBusy(false);
      if (event.code === 1008) { // refused (an unknown conversation, another origin): say so, stop
        status("the server refused this connection");
        return;
      }
      status("disconnected: reconnecting…");
      setTimeout(() => { if (ws === socket) connect(); }, 1500);
    };
  }

  function submit(event) {
    event.preventDefault();
    const text = input.value.trim();
    if (!text || !ready || busy) return;
    input.value = "";
    add("user").textContent = text;
    if (!conversation) listPending(text);
    setBusy(true);
    send({ role: "user", type: "message", start: true });
    send({ role: "user", type: "message", content: text });
    send({ role: "user", type: "message", end: true });
  }

  $("composer").addEventListener("submit", submit);
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) submit(event);
  });
  stopButton.onclick = () => send({ role: "user", type: "command", content: "stop" });

  // -- voice --------------------------------------------------------------------------------

  recordButton.onclick = async () => {
    if (recorder) { recorder.stop(); return; }
    if (!navigator.mediaDevices || !window.MediaRecorder) {
      add("error").textContent = "this browser cannot record here (recording needs https or localhost)";
      return;
    }
    let stream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    } catch (error) {
      add("error").textContent = "no microphone: " + error.message;
      return;
    }
    const parts = [];
    recorder = new MediaRecorder(stream);
    recorder.ondataavailable = (event) => parts.push(event.data);
    recorder.onstop = async () => {
      stream.getTracks().forEach((track) => track.stop());
      recorder = null;
      recordButton.classList.remove("recording");
      recordButton.textContent = "Record";
      try {
        const wav = await Wav.fromBlob(new Blob(parts));
        setBusy(true);
        status("transcribing…");
        send({ role: "user", type: "audio", format: "wav", start: true });
        ws.send(wav);
        send({ role: "user", type: "audio", format: "wav", end: true });
      } catch (error) {
        add("error").textContent = "could not read the recording: " + error.message;
      }
    };
    recorder.start();
    recordButton.classList.add("recording");
    recordButton.textContent = "Stop recording";
  };

  // -- stored conversations -----------------------------------------------------------------

  async function api(path) {
    const response = await fetch(path, { headers: { "X-API-KEY": token } });
    if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
    return response.json();
  }

  // A new conversation is listed as soon as it is sent; the server's list replaces the entry
  // when the conversation is stored.
  function listPending(text) {
    const list = $("conversations");
    for (const el of list.querySelectorAll("li.current")) el.classList.remove("current");
    const li = document.createElement("li");
    li.textContent = text.split("\n")[0].slice(0, 80);
    li.className = "current pending";
    list.prepend(li);
  }

  async function loadConversations() {
    let listed;
    try { listed = await api("/conversations"); } catch { return; }
    const list = $("conversations");
    list.replaceChildren();
    for (const item of listed) {
      const li = document.createElement("li");
      li.textContent = item.title || "(untitled)";
      li.title = `${item.title}\n${item.updated_at} · ${item.message_count} messages`;
      li.dataset.id = item.id;
      if (item.id === conversation) li.className = "current";
      li.onclick = () => open(item.id);
      list.appendChild(li);
    }
  }

  function show(messages) {
    for (const message of messages) {
      if (message.role === "user" && message.type === "message") { add("user").textContent = message.content; continue; }
      if (message.role === "computer" && message.type === "confirmation") continue;
      if (message.type === "files") { files(message.content); continue; }
      if (message.type === "job") { handedBack(message.content); continue; }
      const chunk = { role: message.role, type: message.type, format: message.format };
      if (message.type === "image" || (message.role === "computer" && message.type === "code")) {
        content({ ...chunk, content: message.content });
        continue;
      }
      begin({ ...chunk, start: true });
      content({ ...chunk, content: message.content });
      finish();
    }
    lastBlock = null;
  }

  async function open(id) {
    if (busy) return;
    conversation = id;
    setUrl();
    log.replaceChildren();
    current = lastBlock = null;
    if (id) {
      try { show((await api("/conversations/" + encodeURIComponent(id))).messages); } catch (error) {
        add("error").textContent = error.message;
      }
    }
    connect();
    loadConversations();
  }

  $("new-chat").onclick = () => open(null);
  open(conversation);
})();
