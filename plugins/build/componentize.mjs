// core module (wasm32-wasi reactor, imports only drsg:preprocess/host@1.0.0) -> component, through
// jco's JS API (componentEmbed + componentNew; the `jco embed` CLI fails on these machines).
// usage: node componentize.mjs <node_modules dir> <core.wasm> <file.wit> <world> <out.wasm>
import { readFile, writeFile, rename } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [nodeModules, corePath, witPath, world, outPath] = process.argv.slice(2);
if (!outPath) {
  console.error("usage: node componentize.mjs <node_modules> <core.wasm> <file.wit> <world> <out.wasm>");
  process.exit(2);
}
const jco = await import(pathToFileURL(join(nodeModules, "@bytecodealliance/jco/dist/api.js")).href);
const binary = new Uint8Array(await readFile(corePath));
const witSource = await readFile(witPath, "utf8");
const embedded = await jco.componentEmbed({ binary, witSource, world, stringEncoding: "utf8" });
const component = await jco.componentNew(embedded, []);
await writeFile(outPath + ".tmp", component);
await rename(outPath + ".tmp", outPath);
console.log(`${outPath}: ${component.length} bytes`);
