// Walk-through REPL: keeps one app window alive and evaluates JS snippets posted to it.
import http from "node:http";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync } from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { launchApp, seedSettings, startDriver, clickAway, typeInto, waitForScreen } from "../app.mjs";

const SHOTS = "/tmp/walk/shots";
const fake = spawn("/tmp/probe/bin/fake-llm", ["--scenario", "/tmp/walk/scenario.json", "--port", "19150"], { stdio: ["ignore", "pipe", "inherit"] });
const url = await new Promise((res) => readline.createInterface({ input: fake.stdout }).once("line", (l) => res(l.trim())));
console.log("fake at", url);
const home = mkdtempSync("/tmp/walk/home-");
if (process.env.NOSEED !== "1") seedSettings(home, { base_url: `${url}/v1`, model: "fake-model" }, {});
const driver = await startDriver({ port: 4560, home });
const app = await launchApp(driver);
console.log("app up; home", home);
const testid = (id) => app.$(`[data-testid="${id}"]`);
const shot = async (name) => { await app.saveScreenshot(path.join(SHOTS, `${name}.png`)); return `${SHOTS}/${name}.png`; };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const text = async () => app.execute(() => document.querySelector("main")?.innerText ?? "");
const ctx = { app, testid, shot, sleep, text, clickAway, typeInto, waitForScreen, home, url, execFileSync, writeFileSync, readFileSync, mkdirSync, mkdtempSync, path };
let stopping = false;
const server = http.createServer(async (req, res) => {
  let body = "";
  for await (const c of req) body += c;
  if (body.trim() === "QUIT") {
    res.end("bye\n");
    stopping = true;
    await app.deleteSession().catch(() => {});
    await driver.stop();
    fake.kill("SIGTERM");
    server.close();
    process.exit(0);
  }
  try {
    const fn = new Function(...Object.keys(ctx), `return (async () => { ${body} })();`);
    const out = await fn(...Object.values(ctx));
    res.end((typeof out === "string" ? out : JSON.stringify(out, null, 1)) + "\n");
  } catch (e) {
    res.end("ERROR: " + (e?.stack ?? e) + "\n");
  }
});
server.listen(19160, "127.0.0.1", () => console.log("repl on 19160"));
