package webui_test

import (
	"testing"
)

// markdownFuzz renders seeded random text built from Markdown's special characters, and
// holds the renderer to its promises on every one: no exception, only the elements it means to
// make, no attributes beyond its own, and links only to http(s) and mailto.
func markdownFuzz(t *testing.T, b *browser) {
	scripted(t, b, "", 0)
	bad := eval[[]string](b, `import("/ui/markdown.js").then(({ render }) => {
		const allowed = new Set(["P","BR","STRONG","EM","CODE","PRE","A","H1","H2","H3","H4","H5","H6","UL","OL","LI",
			"BLOCKQUOTE","HR","TABLE","THEAD","TBODY","TR","TH","TD","DIV","SPAN","BUTTON"]);
		const attrs = new Set(["class","href","rel","target","type","aria-label"]);
		const pieces = ["*","**","_","__","`+"`"+`","`+"```"+`","~~~","#","# ","> ","- ","1. ","|","---","[","]","(",")",
			"http://x.y/","javascript:alert(1)","<script>","<img src=x onerror=alert(1)>","&amp;","\n","\n\n"," ","a","é","$x^2$"];
		let seed = 12345;
		const rand = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
		const bad = [];
		for (let i = 0; i < 3000 && bad.length < 5; i++) {
			let text = "";
			for (let k = rand(40); k > 0; k--) text += pieces[rand(pieces.length)];
			try {
				const box = document.createElement("div");
				box.append(render(text));
				for (const el of box.querySelectorAll("*")) {
					if (!allowed.has(el.tagName)) bad.push(JSON.stringify(text) + ": element " + el.tagName);
					for (const a of el.attributes) if (!attrs.has(a.name)) bad.push(JSON.stringify(text) + ": attribute " + a.name);
					if (el.tagName === "A" && !/^(https?:|mailto:)/i.test(el.getAttribute("href"))) bad.push(JSON.stringify(text) + ": link " + el.getAttribute("href"));
				}
			} catch (e) {
				bad.push(JSON.stringify(text) + ": " + e);
			}
		}
		return bad;
	})`)
	for _, m := range bad {
		t.Error(m)
	}
}
