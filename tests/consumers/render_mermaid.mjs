// Render Mermaid charts the way GitHub does: Mermaid's own renderer (npm `mermaid`) in a real browser
// (Debian's chromium, headless, driven by npm `playwright-core`). Both npm packages come from
// scripts/tools.sh (DEST/mermaid/node_modules).
//
//   node render_mermaid.mjs NODE_MODULES CHROMIUM CHARTS.json OUTDIR
//
// CHARTS.json is {"name": "mermaid source", ...}. For each chart OUTDIR gets NAME.svg and NAME.png (the
// drawing as the browser paints it), and OUTDIR/results.json maps each name to {"error": message} when Mermaid
// refused it, else {"diagram": type, "width", "height", "lines" (each xychart line's points), "bars", "legend"
// (its entries), "slices" (pie), "nodes" (flowchart), "texts", "svgBytes", "errorDrawn"}: what was drawn,
// counted in the live DOM.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [modules, chromiumPath, chartsFile, outDir] = process.argv.slice(2);
const require = createRequire(join(modules, "noop.js"));
const { chromium } = require("playwright-core");
const mermaidScript = require.resolve("mermaid/dist/mermaid.min.js");
const charts = JSON.parse(readFileSync(chartsFile, "utf8"));

const profile = mkdtempSync(join(tmpdir(), "aicr-gen-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: chromiumPath,
  headless: true,
  // as a root CI machine with no network but the package registries needs it
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"],
  viewport: { width: 1200, height: 800 },
});
const results = {};
try {
  const page = context.pages()[0] ?? (await context.newPage());
  await page.setContent("<!doctype html><body style='margin:0;background:white'><div id=out></div></body>");
  await page.addScriptTag({ path: mermaidScript });
  await page.evaluate(() => window.mermaid.initialize({ startOnLoad: false, securityLevel: "strict" }));
  for (const [name, source] of Object.entries(charts)) {
    const drawn = await page.evaluate(async ([id, text]) => {
      const out = document.getElementById("out");
      out.innerHTML = "";
      try {
        await window.mermaid.parse(text);
        const { svg, diagramType } = await window.mermaid.render(id, text);
        out.innerHTML = svg;
        const root = out.querySelector("svg");
        const box = root.getBoundingClientRect();
        const count = (selector) => root.querySelectorAll(selector).length;
        const lines = [...root.querySelectorAll("g.plot [class^=line-plot] path")]
          .map((path) => (path.getAttribute("d").match(/[ML]/g) ?? []).length);
        return { diagram: diagramType, width: box.width, height: box.height, svgBytes: svg.length, lines,
                 bars: count("g.plot [class^=bar-plot] rect"), legend: count("g.legend .markers path"),
                 slices: count("path.pieCircle"), nodes: count("g.node"), texts: count("text"),
                 errorDrawn: count(".error-icon") > 0, svg };
      } catch (error) {
        return { error: String(error?.message ?? error) };
      }
    }, [`chart-${Object.keys(results).length}`, source]);
    if (drawn.svg !== undefined) {
      writeFileSync(join(outDir, `${name}.svg`), drawn.svg);
      delete drawn.svg;
      await page.locator("#out > svg").screenshot({ path: join(outDir, `${name}.png`) });
    }
    results[name] = drawn;
  }
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
writeFileSync(join(outDir, "results.json"), JSON.stringify(results, null, 1));
