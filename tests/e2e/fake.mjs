// Runs the fake provider server (crates/fake-llm) as its own process, as a real provider is.
import { spawn } from "node:child_process";
import path from "node:path";
import readline from "node:readline";
import { repoRoot } from "./app.mjs";

export async function startFake(scenarioFile) {
  const bin = path.join(repoRoot, "target/debug/fake-llm");
  const child = spawn(bin, ["--scenario", path.join(repoRoot, "tests/scenarios", scenarioFile)], { stdio: ["ignore", "pipe", "inherit"] });
  const url = await new Promise((resolve, reject) => {
    const rl = readline.createInterface({ input: child.stdout });
    rl.once("line", (l) => resolve(l.trim()));
    child.once("exit", (c) => reject(new Error(`fake-llm exited with ${c}`)));
  });
  return {
    url,
    baseUrl: `${url}/v1`,
    async requests() {
      return (await fetch(`${url}/_fake/requests`)).json();
    },
    async setScenario(scenario) {
      await fetch(`${url}/_fake/scenario`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify(scenario) });
    },
    stop() {
      child.kill("SIGTERM");
    },
  };
}
