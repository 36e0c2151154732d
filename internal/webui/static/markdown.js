// A small Markdown renderer that builds DOM nodes (text goes in through textContent, never as
// HTML): fenced code with a copy button, headings, lists, quotes, rules, tables, and inline code,
// bold, italic and http(s) links. Math stays as text. An unclosed fence (mid-stream) is code to
// the end.

function el(tag, cls, text) {
  const n = document.createElement(tag);
  if (cls) n.className = cls;
  if (text !== undefined) n.textContent = text;
  return n;
}

const INLINE = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([^*\n]+)\*\*|__([^_\n]+)__|\*([^*\s][^*\n]*)\*|\[([^\]\n]+)\]\(([^)\s]+)\)/g;

// inline appends text with its inline markup to parent.
function inline(parent, text) {
  let last = 0;
  for (const m of text.matchAll(INLINE)) {
    if (m.index > last) parent.append(text.slice(last, m.index));
    if (m[1]) parent.append(el("code", "", m[2].replace(/^ (.*) $/, "$1")));
    else if (m[3] || m[4]) inline(parent.appendChild(el("strong")), m[3] || m[4]);
    else if (m[5]) inline(parent.appendChild(el("em")), m[5]);
    else if (/^(https?:|mailto:)/i.test(m[7])) {
      const a = el("a", "", m[6]);
      a.href = m[7];
      a.rel = "noopener noreferrer";
      a.target = "_blank";
      parent.append(a);
    } else parent.append(m[0]);
    last = m.index + m[0].length;
  }
  if (last < text.length) parent.append(text.slice(last));
}

export function codeBlock(code, lang) {
  const box = el("div", "code");
  const head = box.appendChild(el("div", "code-head"));
  head.append(el("span", "", lang || "code"));
  const copy = head.appendChild(el("button", "copy", "Copy"));
  copy.type = "button";
  copy.setAttribute("aria-label", "Copy code");
  box.appendChild(el("pre")).appendChild(el("code", "", code));
  return box;
}

const cells = (line) => line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());
const isTableRule = (line) => /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/.test(line);
const LIST = /^\s*([-*+]|\d+[.)])\s+(.*)$/;

// render returns a fragment holding text rendered as Markdown.
export function render(text) {
  const out = document.createDocumentFragment();
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s*(```+|~~~+)\s*([\w+#.-]*)/);
    if (fence) {
      const body = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(fence[1]); i++) body.push(lines[i]);
      i++;
      out.append(codeBlock(body.join("\n"), fence[2]));
      continue;
    }
    if (!line.trim()) { i++; continue; }
    const h = line.match(/^(#{1,6})\s+(.*)$/);
    if (h) {
      inline(out.appendChild(el("h" + h[1].length)), h[2]);
      i++;
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      out.append(el("hr"));
      i++;
      continue;
    }
    if (line.includes("|") && i + 1 < lines.length && isTableRule(lines[i + 1])) {
      const table = out.appendChild(el("table"));
      const head = table.appendChild(el("thead")).appendChild(el("tr"));
      for (const c of cells(line)) inline(head.appendChild(el("th")), c);
      const body = table.appendChild(el("tbody"));
      for (i += 2; i < lines.length && lines[i].includes("|"); i++) {
        const tr = body.appendChild(el("tr"));
        for (const c of cells(lines[i])) inline(tr.appendChild(el("td")), c);
      }
      continue;
    }
    if (/^\s*>/.test(line)) {
      const quote = [];
      for (; i < lines.length && /^\s*>/.test(lines[i]); i++) quote.push(lines[i].replace(/^\s*>\s?/, ""));
      out.appendChild(el("blockquote")).append(render(quote.join("\n")));
      continue;
    }
    const item = line.match(LIST);
    if (item) {
      const list = out.appendChild(el(/\d/.test(item[1]) ? "ol" : "ul"));
      for (; i < lines.length; i++) {
        const m = lines[i].match(LIST);
        if (m) inline(list.appendChild(el("li")), m[2]);
        else if (lines[i].trim() && /^\s{2,}/.test(lines[i]) && list.lastChild) inline(list.lastChild, " " + lines[i].trim());
        else break;
      }
      continue;
    }
    // A paragraph: this line (whatever it is, so that every turn of the loop moves on), then
    // the lines up to one that starts another block.
    const para = [lines[i++]];
    for (; i < lines.length && lines[i].trim() && !/^\s*(```|~~~|#{1,6}\s|>)/.test(lines[i]) && !LIST.test(lines[i]); i++) {
      para.push(lines[i]);
    }
    const p = out.appendChild(el("p"));
    para.forEach((l, k) => {
      if (k) p.append(el("br"));
      inline(p, l);
    });
  }
  return out;
}
