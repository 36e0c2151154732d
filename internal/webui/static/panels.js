// The side panels: the settings form and the conversation list (open, rename, delete, export).

import { defaultSettings } from "./store.js";

const $ = (id) => document.getElementById(id);

const FIELDS = { system: "set-system", temperature: "set-temperature", top_p: "set-top-p",
  max_tokens: "set-max-tokens", seed: "set-seed", tools: "set-tools" };

// bindSettings fills the settings form from the store and saves every change.
export function bindSettings(store, notice) {
  const fill = () => {
    for (const [k, id] of Object.entries(FIELDS)) $(id).value = store.settings[k] ?? "";
    $("thinking").checked = store.settings.thinking;
  };
  for (const [k, id] of Object.entries(FIELDS)) {
    $(id).addEventListener("input", (e) => {
      store.settings[k] = e.target.value;
      notice(store.saveSettings());
    });
  }
  $("reset-settings").addEventListener("click", () => {
    store.settings = defaultSettings();
    notice(store.saveSettings());
    fill();
  });
  const toggle = $("open-settings");
  toggle.addEventListener("click", () => {
    const panel = $("settings");
    panel.hidden = !panel.hidden;
    toggle.setAttribute("aria-expanded", String(!panel.hidden));
  });
  fill();
}

function setDrawer(open) {
  $("sidebar").classList.toggle("open", open);
  $("scrim").hidden = !open;
  $("open-side").setAttribute("aria-expanded", String(open));
}

// bindSidebar wires the list's fixed buttons; renderList draws the entries.
export function bindSidebar(store, app) {
  $("new-chat").addEventListener("click", () => {
    app.fresh();
    setDrawer(false);
  });
  $("open-side").addEventListener("click", () => setDrawer(true));
  $("close-side").addEventListener("click", () => setDrawer(false));
  $("scrim").addEventListener("click", () => setDrawer(false));
  $("export").addEventListener("click", () => {
    const url = URL.createObjectURL(new Blob([store.exportJSON()], { type: "application/json" }));
    const a = document.createElement("a");
    a.href = url;
    a.download = "lily-conversations.json";
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  });
  $("conv-list").addEventListener("click", (e) => {
    const b = e.target.closest("button");
    const li = e.target.closest("li");
    if (!b || !li) return;
    const id = li.dataset.id;
    if (b.classList.contains("open")) {
      app.open(id);
      setDrawer(false);
    } else if (b.classList.contains("rename")) {
      startRename(store, app, li);
    } else if (b.classList.contains("delete")) {
      // Two clicks: the first arms the button, the second (within 3 s) deletes.
      if (!b.classList.contains("armed")) {
        b.classList.add("armed");
        b.textContent = "Delete?";
        setTimeout(() => {
          b.classList.remove("armed");
          b.textContent = "✕";
        }, 3000);
        return;
      }
      app.notice(store.remove(id));
      if (!store.current()) app.fresh();
      else renderList(store, app);
    }
  });
}

function startRename(store, app, li) {
  const c = store.convs.find((x) => x.id === li.dataset.id);
  const input = document.createElement("input");
  input.value = c.title;
  input.setAttribute("aria-label", "New title");
  li.replaceChildren(input);
  input.focus();
  input.select();
  let done = false;
  const finish = (keep) => {
    if (done) return;
    done = true;
    if (keep) app.notice(store.rename(c.id, input.value));
    renderList(store, app);
  };
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter") finish(true);
    if (e.key === "Escape") {
      e.stopPropagation();
      finish(false);
    }
  });
  input.addEventListener("blur", () => finish(true));
}

// renderList draws the saved conversations, the current one marked.
export function renderList(store, app) {
  const items = store.convs.filter((c) => c.messages.length > 0 || c.id === store.currentID).map((c) => {
    const li = document.createElement("li");
    li.dataset.id = c.id;
    if (c.id === store.currentID) {
      li.className = "current";
      li.setAttribute("aria-current", "true");
    }
    const open = li.appendChild(document.createElement("button"));
    open.type = "button";
    open.className = "open";
    open.textContent = c.title;
    for (const [cls, text, label] of [["rename", "✎", "Rename"], ["delete", "✕", "Delete"]]) {
      const b = li.appendChild(document.createElement("button"));
      b.type = "button";
      b.className = cls;
      b.textContent = text;
      b.setAttribute("aria-label", label + " " + c.title);
    }
    return li;
  });
  $("conv-list").replaceChildren(...items);
}
