// Conversations and settings in the browser's localStorage; nothing is stored on the server.
// A conversation: {id, title, created, updated, messages: [{role: "user", content} |
// {role: "assistant", content, reasoning, tool_calls: [{id, name, arguments}], stats, stopped, error}]}.

const CONVS = "lily.conversations";
const CURRENT = "lily.current";
const SETTINGS = "lily.settings";

export const defaultSettings = () => ({
  system: "", temperature: "", top_p: "", max_tokens: "", seed: "", tools: "", thinking: true,
});

function read(key, fallback) {
  try {
    const v = JSON.parse(localStorage.getItem(key));
    return v === null ? fallback : v;
  } catch (_) {
    return fallback; // unreadable (edited by hand, or another page's): start afresh
  }
}

// write stores value and returns "" or why it could not (storage full or disabled).
function write(key, value) {
  try {
    localStorage.setItem(key, JSON.stringify(value));
    return "";
  } catch (e) {
    return "Could not save in this browser's storage: " + e.message;
  }
}

export class Store {
  constructor() {
    const list = read(CONVS, []);
    this.convs = Array.isArray(list) ? list.filter((c) => c && c.id && Array.isArray(c.messages)) : [];
    this.currentID = read(CURRENT, "");
    this.settings = { ...defaultSettings(), ...read(SETTINGS, {}) };
  }

  current() {
    return this.convs.find((c) => c.id === this.currentID) || null;
  }

  // create starts a conversation (not saved until it has a message) and makes it current.
  create() {
    const now = Date.now();
    const c = { id: now.toString(36) + Math.random().toString(36).slice(2, 8), title: "New chat",
      created: now, updated: now, messages: [] };
    this.convs.unshift(c);
    this.currentID = c.id;
    return c;
  }

  select(id) {
    this.currentID = id;
    write(CURRENT, id);
  }

  rename(id, title) {
    const c = this.convs.find((x) => x.id === id);
    if (c && title.trim()) c.title = title.trim().slice(0, 200);
    return this.save();
  }

  remove(id) {
    this.convs = this.convs.filter((c) => c.id !== id);
    if (this.currentID === id) this.currentID = "";
    return this.save();
  }

  // save writes every conversation that has messages, most recently updated first.
  save() {
    const cur = this.current();
    if (cur) {
      cur.updated = Date.now();
      if (cur.title === "New chat") {
        const first = cur.messages.find((m) => m.role === "user");
        if (first) cur.title = first.content.replace(/\s+/g, " ").trim().slice(0, 48) || "New chat";
      }
    }
    this.convs.sort((a, b) => b.updated - a.updated);
    return write(CONVS, this.convs.filter((c) => c.messages.length > 0)) || write(CURRENT, this.currentID);
  }

  saveSettings() {
    return write(SETTINGS, this.settings);
  }

  // exportJSON is every saved conversation as a JSON document.
  exportJSON() {
    return JSON.stringify({ exported: new Date().toISOString(),
      conversations: this.convs.filter((c) => c.messages.length > 0) }, null, 2);
  }
}
