// Rendering of one message: a user turn (text, Edit), or an assistant turn (a "thinking" block
// that streams and collapses when the answer starts, tool-call cards, Markdown, live figures).

import { render } from "./markdown.js";

function el(tag, cls, text) {
  const n = document.createElement(tag);
  if (cls) n.className = cls;
  if (text !== undefined) n.textContent = text;
  return n;
}

function button(cls, text, label) {
  const b = el("button", cls, text);
  b.type = "button";
  if (label) b.setAttribute("aria-label", label);
  return b;
}

// userNode renders a user turn; index is its place in the conversation.
export function userNode(msg, index) {
  const n = el("article", "msg user");
  n.dataset.index = index;
  n.append(el("div", "body", msg.content));
  const actions = n.appendChild(el("div", "actions"));
  actions.append(button("edit", "Edit", "Edit this message and send again"));
  return n;
}

// editBox replaces a user turn's text with an editor; the buttons are handled by the caller.
export function editBox(node, content) {
  const box = el("div", "edit-box");
  const ta = box.appendChild(el("textarea"));
  ta.value = content;
  ta.setAttribute("aria-label", "Edited message");
  const bar = box.appendChild(el("div", "actions"));
  bar.append(button("edit-send", "Send"), button("edit-cancel", "Cancel"));
  node.replaceChildren(box);
  ta.focus();
  return ta;
}

const fmt = (x, digits) => (Number.isFinite(x) ? x.toFixed(digits) : "–");

// figures lists a reply's measurements as the page saw them (times include the network).
export function figures(s) {
  const parts = [];
  if (s.ttft !== undefined) parts.push(["ttft", "TTFT " + fmt(s.ttft / 1000, 2) + " s"]);
  if (s.prefill !== undefined) parts.push(["prefill", "prefill " + fmt(s.prefill, 1) + " tok/s"]);
  if (s.decode !== undefined) parts.push(["decode", "decode " + fmt(s.decode, 1) + " tok/s"]);
  if (s.in !== undefined) parts.push(["in", "in " + s.in + " tok"]);
  if (s.cached !== undefined) parts.push(["cached", "cached " + s.cached]);
  if (s.out !== undefined) parts.push(["out", "out " + s.out + " tok"]);
  if (s.finish) parts.push(["finish", "finish: " + s.finish]);
  return parts;
}

// AssistantView renders an assistant turn and updates it in place while it streams.
export class AssistantView {
  constructor(msg, index, last) {
    this.msg = msg;
    this.node = el("article", "msg assistant");
    this.node.dataset.index = index;
    this.thinking = null;
    this.userToggled = false;
    this.body = this.node.appendChild(el("div", "body markdown"));
    this.tools = this.node.appendChild(el("div", "tools"));
    this.status = this.node.appendChild(el("div", "status"));
    this.figs = this.node.appendChild(el("div", "figures"));
    this.figs.setAttribute("aria-label", "Figures for this reply");
    this.actions = this.node.appendChild(el("div", "actions"));
    if (last) this.actions.append(button("regen", "Regenerate", "Generate this reply again"));
    this.update(false);
  }

  ensureThinking() {
    if (this.thinking) return;
    const d = el("details", "thinking");
    d.open = true;
    const s = d.appendChild(el("summary", "", "Thinking…"));
    s.setAttribute("aria-label", "Thinking (show or hide)");
    this.reasoning = d.appendChild(el("div", "reasoning"));
    this.autoOpen = true;
    // A toggle the page made leaves open equal to autoOpen; any other is the reader's, and wins.
    d.addEventListener("toggle", () => {
      if (d.open !== this.autoOpen) this.userToggled = true;
    });
    this.thinking = d;
    this.node.insertBefore(d, this.body);
  }

  // update redraws what changed; streaming says the reply is still arriving.
  update(streaming) {
    const m = this.msg;
    const answering = m.content.length > 0 || m.tool_calls.length > 0;
    if (m.reasoning) {
      this.ensureThinking();
      if (this.reasoning.textContent !== m.reasoning) this.reasoning.textContent = m.reasoning;
      this.thinking.firstChild.textContent = streaming && !answering ? "Thinking…" : "Thoughts";
      const open = !answering; // collapses when the answer starts; stays open when there is none
      if (!this.userToggled && this.thinking.open !== open) {
        this.autoOpen = open;
        this.thinking.open = open;
      }
    }
    if (this.tools.childElementCount !== m.tool_calls.length) this.tools.replaceChildren();
    m.tool_calls.forEach((tc, i) => {
      let card = this.tools.children[i];
      if (!card) {
        card = this.tools.appendChild(el("div", "toolcall"));
        card.append(el("div", "tool-name"), el("pre"));
      }
      card.firstChild.textContent = tc.name;
      card.lastChild.textContent = prettyJSON(tc.arguments);
    });
    if (this.rendered !== m.content) {
      this.body.replaceChildren(render(m.content));
      this.rendered = m.content;
    }
    this.status.replaceChildren();
    if (m.error) this.status.append(el("div", "error", m.error));
    if (m.stopped) this.status.append(el("div", "stopped", "Stopped."));
    this.figs.replaceChildren(...figures(m.stats || {}).map(([k, t]) => el("span", "fig-" + k, t)));
    this.node.setAttribute("aria-busy", streaming ? "true" : "false");
  }
}

function prettyJSON(s) {
  try {
    return JSON.stringify(JSON.parse(s), null, 2);
  } catch (_) {
    return s; // still streaming, or not JSON: as written
  }
}
