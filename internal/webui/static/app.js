// The chat page's controller: the composer, streaming a reply, Stop, edit and regenerate, and the
// header. Conversations and settings: store.js; the API: api.js; drawing a message: view.js.

import { HTTPError, info, setAPIKey, streamChat } from "./api.js";
import { Store } from "./store.js";
import { AssistantView, editBox, userNode } from "./view.js";
import { bindSettings, bindSidebar, renderList } from "./panels.js";

const $ = (id) => document.getElementById(id);
const store = new Store();
const ui = {
  messages: $("messages"), input: $("input"), send: $("send"), stop: $("stop"), thinking: $("thinking"),
  notice: $("notice"), info: $("model-info"), keyDialog: $("key-dialog"), keyInput: $("key-input"),
};
let running = null; // {controller, view} while a reply streams
let server = null; // what /v1/lily/info said

function notice(text) {
  ui.notice.textContent = text || "";
  ui.notice.hidden = !text;
}

function persist() {
  notice(store.save());
  renderList(store, app);
}

// atBottom says whether the reader follows the end of the conversation (then new text keeps it in view).
const atBottom = () => ui.messages.scrollHeight - ui.messages.scrollTop - ui.messages.clientHeight < 40;

function renderConversation() {
  const c = store.current();
  const nodes = [];
  const msgs = c ? c.messages : [];
  const lastAssistant = msgs.findLastIndex((m) => m.role === "assistant");
  msgs.forEach((m, i) => {
    if (m.role === "user") nodes.push(userNode(m, i));
    else nodes.push(new AssistantView(m, i, i === lastAssistant && !running).node);
  });
  ui.messages.replaceChildren(...nodes);
  ui.messages.scrollTop = ui.messages.scrollHeight;
}

// askKey opens the API-key dialog and resolves once a key is entered.
function askKey(reason) {
  $("key-reason").textContent = reason;
  ui.keyInput.value = "";
  if (!ui.keyDialog.open) ui.keyDialog.showModal();
  ui.keyInput.focus();
  return new Promise((resolve) => {
    const save = () => {
      const k = ui.keyInput.value.trim();
      if (!k) return;
      setAPIKey(k);
      ui.keyDialog.close();
      $("key-save").removeEventListener("click", save);
      ui.keyInput.removeEventListener("keydown", onKey);
      resolve();
    };
    const onKey = (e) => {
      if (e.key === "Enter") {
        e.preventDefault();
        save();
      }
    };
    $("key-save").addEventListener("click", save);
    ui.keyInput.addEventListener("keydown", onKey);
  });
}

// withKey runs fn, asking for the API key and retrying while the server answers 401.
async function withKey(fn) {
  for (let first = true; ; first = false) {
    try {
      return await fn();
    } catch (e) {
      if (!(e instanceof HTTPError) || e.status !== 401) throw e;
      setAPIKey("");
      await askKey(first ? "This server asks for an API key (lily serve --api-key)." : "That key was not accepted; try again.");
    }
  }
}

async function loadInfo() {
  try {
    server = await withKey(info);
    const parts = [server.model, server.backend, server.device].filter(Boolean);
    if (server.context_size) parts.push("ctx " + server.context_size.toLocaleString("en-US"));
    ui.info.textContent = parts.join(" · ");
  } catch (e) {
    ui.info.textContent = "server unreachable: " + e.message;
  }
}

// requestBody is the chat request for the conversation's messages with the current settings;
// fields left empty are omitted, so the server applies the model's defaults.
function requestBody(msgs) {
  const s = store.settings;
  const messages = [];
  if (s.system.trim()) messages.push({ role: "system", content: s.system });
  for (const m of msgs) {
    if (m.role === "user") {
      messages.push({ role: "user", content: m.content });
      continue;
    }
    const a = { role: "assistant", content: m.content };
    if (m.reasoning) a.reasoning_content = m.reasoning;
    if (m.tool_calls.length) {
      a.tool_calls = m.tool_calls.map((t) => ({ id: t.id, type: "function", function: { name: t.name, arguments: t.arguments } }));
    }
    messages.push(a);
  }
  const body = {
    messages, stream: true, stream_options: { include_usage: true }, return_token_ids: true,
    chat_template_kwargs: { enable_thinking: !!s.thinking },
  };
  for (const [k, int] of [["temperature", false], ["top_p", false], ["max_tokens", true], ["seed", true]]) {
    const v = String(s[k]).trim();
    if (v !== "") body[k] = int ? parseInt(v, 10) : parseFloat(v);
  }
  // Tools as given; text that is not JSON goes as a string, so the server's 400 says what is wrong.
  const tools = String(s.tools ?? "").trim();
  if (tools !== "") {
    try {
      body.tools = JSON.parse(tools);
    } catch (_) {
      body.tools = tools;
    }
  }
  return body;
}

// apply folds one streamed chunk into the reply and its live figures; t0 is when the request left.
function apply(reply, ev, t0) {
  if (ev.error) throw new Error(ev.error.message || "the server reported an error");
  const st = reply.stats;
  const now = performance.now();
  if (ev.prompt_token_ids) st.in = ev.prompt_token_ids.length;
  for (const ch of ev.choices || []) {
    const d = ch.delta || {};
    if (d.reasoning_content) reply.reasoning += d.reasoning_content;
    if (d.content) reply.content += d.content;
    for (const tc of d.tool_calls || []) {
      const t = reply.tool_calls[tc.index] || (reply.tool_calls[tc.index] = { id: "", name: "", arguments: "" });
      if (tc.id) t.id = tc.id;
      if (tc.function && tc.function.name) t.name = tc.function.name;
      if (tc.function && tc.function.arguments) t.arguments += tc.function.arguments;
    }
    const n = (ch.token_ids || []).length;
    if (n) {
      if (reply.firstAt === undefined) {
        reply.firstAt = now;
        st.ttft = now - t0;
      }
      reply.lastAt = now;
      st.out = (st.out || 0) + n;
    }
    if (ch.finish_reason) st.finish = ch.finish_reason;
  }
  if (ev.usage) {
    st.in = ev.usage.prompt_tokens;
    st.out = ev.usage.completion_tokens;
    st.cached = (ev.usage.prompt_tokens_details || {}).cached_tokens || 0;
  }
  if (st.ttft > 0 && st.in !== undefined) st.prefill = (st.in - (st.cached || 0)) / (st.ttft / 1000);
  if (st.out > 1 && reply.lastAt > reply.firstAt) st.decode = (st.out - 1) / ((reply.lastAt - reply.firstAt) / 1000);
}

// generate streams the assistant's reply to the current conversation.
async function generate() {
  const conv = store.current();
  const body = requestBody(conv.messages);
  const reply = { role: "assistant", content: "", reasoning: "", tool_calls: [], stats: {} };
  conv.messages.push(reply);
  const view = new AssistantView(reply, conv.messages.length - 1, false);
  running = { controller: new AbortController(), view };
  renderConversation();
  ui.messages.lastChild.replaceWith(view.node);
  setRunning(true);
  let queued = false;
  const draw = () => {
    queued = false;
    const follow = atBottom();
    view.update(true);
    if (follow) ui.messages.scrollTop = ui.messages.scrollHeight;
  };
  try {
    await withKey(() => {
      const t0 = performance.now();
      return streamChat(body, running.controller.signal, (ev) => {
        apply(reply, ev, t0);
        if (!queued) {
          queued = true;
          requestAnimationFrame(draw);
        }
      });
    });
  } catch (e) {
    if (e.name === "AbortError") reply.stopped = true;
    else reply.error = e.message;
  }
  delete reply.firstAt;
  delete reply.lastAt;
  running = null;
  setRunning(false);
  persist();
  renderConversation();
}

function setRunning(on) {
  ui.send.hidden = on;
  ui.stop.hidden = !on;
  ui.messages.setAttribute("aria-busy", on ? "true" : "false");
  for (const b of document.querySelectorAll(".msg .edit, .msg .regen")) b.disabled = on;
}

function stop() {
  if (running) running.controller.abort();
}

function send() {
  const text = ui.input.value;
  if (running || !text.trim()) return;
  const conv = store.current() || store.create();
  conv.messages.push({ role: "user", content: text });
  ui.input.value = "";
  persist();
  generate();
}

// copyText puts text on the clipboard: the Clipboard API where the page is a secure context
// (localhost), else a hidden textarea and the copy command (http on another host).
async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch (_) {
    const ta = document.createElement("textarea");
    ta.value = text;
    ta.setAttribute("readonly", "");
    ta.style.position = "fixed";
    ta.style.opacity = "0";
    document.body.append(ta);
    ta.select();
    const ok = document.execCommand("copy");
    ta.remove();
    return ok;
  }
}

// The app object is what the side panels call back into.
const app = {
  store,
  open(id) {
    if (running) return;
    store.select(id);
    renderConversation();
    renderList(store, app);
  },
  fresh() {
    if (running) return;
    store.create();
    renderConversation();
    renderList(store, app);
    ui.input.focus();
  },
  notice,
};

ui.messages.addEventListener("click", async (e) => {
  const b = e.target.closest("button");
  if (!b || running) return;
  const conv = store.current();
  const node = b.closest(".msg");
  const index = node ? Number(node.dataset.index) : -1;
  if (b.classList.contains("copy")) {
    const code = b.closest(".code").querySelector("code").textContent;
    b.textContent = (await copyText(code)) ? "Copied" : "Copy failed";
    setTimeout(() => { b.textContent = "Copy"; }, 1500);
  } else if (b.classList.contains("regen")) {
    conv.messages.splice(index);
    generate();
  } else if (b.classList.contains("edit")) {
    editBox(node, conv.messages[index].content);
  } else if (b.classList.contains("edit-cancel")) {
    renderConversation();
  } else if (b.classList.contains("edit-send")) {
    const text = node.querySelector("textarea").value;
    if (!text.trim()) return;
    conv.messages.splice(index);
    conv.messages.push({ role: "user", content: text });
    persist();
    generate();
  }
});

$("composer").addEventListener("submit", (e) => {
  e.preventDefault();
  send();
});
ui.stop.addEventListener("click", stop);
ui.input.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    send();
  }
});
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && running) {
    e.preventDefault();
    stop();
  }
});
// Esc would close the key dialog with the request still waiting for a key: keep it open.
ui.keyDialog.addEventListener("cancel", (e) => e.preventDefault());
ui.thinking.checked = store.settings.thinking;
ui.thinking.addEventListener("change", () => {
  store.settings.thinking = ui.thinking.checked;
  notice(store.saveSettings());
});

bindSettings(store, notice);
bindSidebar(store, app);
renderList(store, app);
renderConversation();
loadInfo();
ui.input.focus();
