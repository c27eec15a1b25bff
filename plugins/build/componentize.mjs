// core module (wasm32-wasi reactor) -> component, through jco's JS API (componentEmbed + componentNew;
// the `jco embed` CLI fails on these machines). A core module that imports wasi_snapshot_preview1
// (wasi-libc's stdio, getenv, …) names the preview1 adapter to make those imports WASI 0.2 ones.
// usage: node componentize.mjs <node_modules dir> <core.wasm> <file.wit> <world> <out.wasm> [adapter.wasm]
import { readFile, writeFile, rename } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [nodeModules, corePath, witPath, world, outPath, adapterPath] = process.argv.slice(2);
if (!outPath) {
  console.error("usage: node componentize.mjs <node_modules> <core.wasm> <file.wit> <world> <out.wasm> [adapter.wasm]");
  process.exit(2);
}
const jco = await import(pathToFileURL(join(nodeModules, "@bytecodealliance/jco/dist/api.js")).href);
const binary = new Uint8Array(await readFile(corePath));
const witSource = await readFile(witPath, "utf8");
const embedded = await jco.componentEmbed({ binary, witSource, world, stringEncoding: "utf8" });
const adapters = adapterPath
  ? [["wasi_snapshot_preview1", new Uint8Array(await readFile(adapterPath))]]
  : [];
const component = await jco.componentNew(embedded, adapters);
await writeFile(outPath + ".tmp", component);
await rename(outPath + ".tmp", outPath);
console.log(`${outPath}: ${component.length} bytes`);
