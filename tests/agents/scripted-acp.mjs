#!/usr/bin/env node
// A small ACP agent that follows a script, for the faults a real agent cannot be made to show on
// demand: exiting mid-turn, writing broken JSON-RPC, never ending a turn, asking to log in, and
// every stop reason. Speaks ACP v1 over stdio, one JSON object per line, as `opencode acp` does.
//
//   node scripted-acp.mjs SCRIPT.json
//
// The script: { "auth": true | "terminal" | "key" | "agent", "initialize": "ok" | "exit", "initialize_delay_ms"?, "startup_write": {path, content}?
// (written into the cwd as the process starts, as OpenCode rewrites its config), "turns": [TURN, ...] }, where a turn
// is { "updates": [sessionUpdate, ...], "permission": {toolCallId, title, rawInput}?, "die_after_asking": true? (exits 300 ms after asking),
// "noise": [line, ...]? (printed raw on stdout first), "write": {path, content}?, "fs": [{path, content?}]? (through the client: a read without
// content, a write with it), "terminal": {command, args, env?, outputByteLimit?}? (through the
// client's terminal), "end": "end_turn" | "max_tokens" | "max_turn_requests" | "refusal"
// | "exit" | "hang" | "deaf" | "garbage" | "garbled_answer" | "unfinished_answer" | "trickled_answer" | "endless_line" | "pester", "usage": {inputTokens, outputTokens}? }. "hang" never
// ends the turn until cancelled; "deaf" ignores the cancel too and goes on editing (a line in
// edits.log every 100 ms); "pester" ignores it and asks to run a command every 100 ms. A permission may list its own "options" ([{optionId, name, kind}]).
// With "children": true the agent starts a child of its own (`sleep`) at once, as real agents
// start the CLI they drive; both pids go to pids.log ({agent, child}). With "escaped_child":
// true it also starts one in a session of its own (as `setsid` or a daemon's double fork does),
// outside its process group, whose pid goes to pids.log as "escaped". Turns are used in
// order; the last one repeats. Every prompt's text is appended to prompts.log, each permission
// answer to permissions.log and each cancel to cancel.log, each error the client sends back to client-errors.log, in $SCRIPTED_ACP_LOGS (else the cwd).
// Logging in: with "auth": true every session/new asks for a login (a method without a type);
// "terminal" offers `<this command> --login` (which logs in and exits 0), "key" wants
// SCRIPTED_KEY=sk-scripted in its environment, "agent" logs in when asked with `authenticate`.
// Until then session/new answers auth-required; a login is the file `logged-in` in the logs.
// "auth_status": {kind, label} with "auth_status_delay_ms": the agent marks the `authStatus`
// extension in its capabilities and pushes `_auth/status_update` that long after `initialize`,
// as Claude Code and Codex do once their background probe of the CLI's login lands.
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";

const logs = process.env.SCRIPTED_ACP_LOGS ?? ".";
const log = (file, text) => appendFileSync(join(logs, file), text);

const script = JSON.parse(readFileSync(process.argv[2], "utf8"));
const loggedIn = () => existsSync(join(logs, "logged-in")) || (script.auth === "key" && process.env.SCRIPTED_KEY === "sk-scripted");
if (process.argv[3] === "--login") {
  writeFileSync(join(logs, "logged-in"), "yes");
  console.log("Logged in to the scripted agent.");
  process.exit(0);
}
if (script.startup_write) writeFileSync(join(process.cwd(), script.startup_write.path), script.startup_write.content);
if (script.children) {
  const child = spawn("sleep", ["300"], { stdio: "ignore" });
  // `detached` makes the child call setsid(): it leads a session and a group of its own.
  const escaped = script.escaped_child ? spawn("sleep", ["301"], { stdio: "ignore", detached: true }) : null;
  escaped?.unref();
  log("pids.log", JSON.stringify({ agent: process.pid, child: child.pid, escaped: escaped?.pid ?? null }) + "\n");
}
const send = (msg) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...msg }) + "\n");
// With "load_session": true it offers session/load, and a process started again on the same
// logs goes on with the turns from where the one before left off, as an agent that keeps its
// sessions (Claude Code, Codex) takes up its own conversation again.
let turn = script.load_session && existsSync(join(logs, "prompts.log")) ? readFileSync(join(logs, "prompts.log"), "utf8").split("\n").filter(Boolean).length : 0;
let nextId = 1000;
const waiting = new Map();
let cancelled = null;

async function prompt(id, params) {
  const text = (params.prompt ?? []).map((b) => b.text ?? "").join("");
  log("prompts.log", JSON.stringify(text) + "\n");
  const t = script.turns[Math.min(turn, script.turns.length - 1)];
  turn += 1;
  const sessionId = params.sessionId;
  // Lines that are no ACP message on stdout (a log line, a blank line), as some CLIs print.
  for (const line of t.noise ?? []) process.stdout.write(line + "\n");
  for (const update of t.updates ?? []) {
    // {"pause_ms": N} in the list: silence that long (a command that goes quiet).
    if (update.pause_ms !== undefined) {
      await new Promise((r) => setTimeout(r, update.pause_ms));
      continue;
    }
    send({ method: "session/update", params: { sessionId, update } });
    await new Promise((r) => setTimeout(r, t.delay_ms ?? 5));
  }
  if (t.permission) {
    const pid = nextId++;
    send({
      id: pid,
      method: "session/request_permission",
      params: {
        sessionId,
        toolCall: { toolCallId: t.permission.toolCallId, title: t.permission.title, rawInput: t.permission.rawInput },
        options: t.permission.options ?? [
          { optionId: "yes", name: "Allow", kind: "allow_once" },
          { optionId: "always", name: "Always allow", kind: "allow_always" },
          { optionId: "no", name: "Reject", kind: "reject_once" },
        ],
      },
    });
    // It dies while the person is still being asked.
    if (t.die_after_asking) {
      setTimeout(() => {
        process.stderr.write("scripted agent: crashed while waiting for permission\n");
        process.exit(5);
      }, 300);
    }
    const answer = await new Promise((r) => waiting.set(pid, r));
    const chosen = answer?.outcome?.outcome === "selected" ? answer.outcome.optionId : "cancelled";
    log("permissions.log", chosen + "\n");
    if (chosen !== "yes" && chosen !== "always") {
      send({ method: "session/update", params: { sessionId, update: { sessionUpdate: "tool_call_update", toolCallId: t.permission.toolCallId, status: "failed" } } });
      return send({ id, result: { stopReason: cancelled ? "cancelled" : "end_turn" } });
    }
  }
  if (t.write) writeFileSync(t.write.path, t.write.content);
  // Through the client's file system, as agents that offer no file tools of their own do.
  for (const f of t.fs ?? []) {
    const fid = nextId++;
    const method = f.content === undefined ? "fs/read_text_file" : "fs/write_text_file";
    send({ id: fid, method, params: { sessionId, path: join(process.cwd(), f.path), ...(f.content === undefined ? {} : { content: f.content }) } });
    const answer = await new Promise((r) => waiting.set(fid, r));
    log("fs.log", JSON.stringify({ method, path: f.path, answer }) + "\n");
  }
  // A command through the client's terminal: create, wait for it, read its output, release.
  if (t.terminal) {
    const ask = (method, params) => {
      const rid = nextId++;
      send({ id: rid, method, params: { sessionId, ...params } });
      return new Promise((r) => waiting.set(rid, r));
    };
    const created = await ask("terminal/create", t.terminal);
    if (created.error) log("terminal.log", JSON.stringify({ error: created.error }) + "\n");
    else {
      const exit = await ask("terminal/wait_for_exit", { terminalId: created.terminalId });
      const output = await ask("terminal/output", { terminalId: created.terminalId });
      await ask("terminal/release", { terminalId: created.terminalId });
      log("terminal.log", JSON.stringify({ exit, output }) + "\n");
    }
  }
  for (const update of t.after ?? []) send({ method: "session/update", params: { sessionId, update } });
  switch (t.end ?? "end_turn") {
    case "exit":
      process.stderr.write("scripted agent: giving up in the middle of the turn\n");
      process.exit(3);
    case "hang":
      cancelled = () => send({ id, result: { stopReason: "cancelled" } });
      return;
    case "deaf":
      setInterval(() => log("edits.log", "edit\n"), 100);
      return;
    case "pester":
      // Deaf to the cancel, and it keeps asking to run a command, every 100 ms, whatever the
      // answer: each answer goes to permissions.log.
      for (let n = 1; ; n++) {
        const pid = nextId++;
        const toolCallId = `pester-${n}`;
        send({ method: "session/update", params: { sessionId, update: { sessionUpdate: "tool_call", toolCallId, title: "bash", status: "pending" } } });
        send({
          id: pid,
          method: "session/request_permission",
          params: { sessionId, toolCall: { toolCallId, title: "bash", rawInput: { command: `echo ${n}` } }, options: [
            { optionId: "yes", name: "Allow", kind: "allow_once" },
            { optionId: "no", name: "Reject", kind: "reject_once" },
          ] },
        });
        const answer = await new Promise((r) => waiting.set(pid, r));
        log("permissions.log", (answer?.outcome?.outcome === "selected" ? answer.outcome.optionId : "cancelled") + "\n");
        await new Promise((r) => setTimeout(r, 100));
      }
    case "garbage":
      process.stdout.write("{this is not json\n");
      return send({ id, result: { stopReason: "end_turn", usage: t.usage } });
    case "garbled_answer":
      // The turn's answer written broken (cut short): the client cannot read it, so for the
      // client the turn never ends. A cancel is answered properly.
      process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id, result: { stopReason: "end_turn" } }).slice(0, -1) + "\n");
      cancelled = () => send({ id, result: { stopReason: "cancelled" } });
      return;
    case "unfinished_answer":
      // The turn's answer written whole but never ended with its line break (a writer that
      // does not flush its last line): the client cannot read it. A cancel ends the line first.
      process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id, result: { stopReason: "end_turn" } }));
      cancelled = () => {
        process.stdout.write("\n");
        send({ id, result: { stopReason: "cancelled" } });
      };
      return;
    case "trickled_answer": {
      // The turn's answer still coming when the step limit strikes: a few bytes every 50 ms (a
      // long message over a slow pipe), never ended by itself. A cancel ends the line first.
      process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id, result: { stopReason: "end_turn", note: "" } }).slice(0, -3));
      const more = setInterval(() => process.stdout.write("still coming "), 50);
      cancelled = () => {
        clearInterval(more);
        process.stdout.write('"}}\n');
        send({ id, result: { stopReason: "cancelled" } });
      };
      return;
    }
    case "endless_line": {
      // 100 MB with no line break (a runaway dump), then nothing: the turn never ends by itself.
      const chunk = Buffer.alloc(1 << 20, "x");
      for (let i = 0; i < 100; i++) {
        if (!process.stdout.write(chunk)) await new Promise((r) => process.stdout.once("drain", r));
      }
      return;
    }
    default:
      return send({ id, result: { stopReason: t.end ?? "end_turn", ...(t.usage ? { usage: { totalTokens: 0, ...t.usage } } : {}) } });
  }
}

function authMethods(caps) {
  switch (script.auth) {
    case true:
      return [{ id: "login", name: "Log in with scripted", description: "Run `scripted login` in a terminal" }];
    case "terminal":
      return caps?.auth?.terminal ? [{ id: "terminal-login", name: "Log in in a terminal", type: "terminal", args: ["--login"] }] : [];
    case "key":
      return [{ id: "key", name: "Scripted key", type: "env_var", vars: [{ name: "SCRIPTED_KEY" }] }];
    case "agent":
      return [{ id: "browser", name: "Log in with the browser", description: "Opens the scripted agent's login page" }];
    default:
      return [];
  }
}

createInterface({ input: process.stdin }).on("line", (line) => {
  if (!line.trim()) return;
  const msg = JSON.parse(line);
  // A slow start (a first `npx` download, a cold cache): `initialize` answered that much later.
  if (msg.method === "initialize" && script.initialize_delay_ms) {
    setTimeout(() => answer(msg), script.initialize_delay_ms);
    return;
  }
  answer(msg);
});

function answer(msg) {
  // An error the client sent back about something the agent wrote.
  if (msg.id === null && msg.error) log("client-errors.log", JSON.stringify(msg) + "\n");
  if (msg.id !== undefined && !msg.method) {
    waiting.get(msg.id)?.(msg.result ?? { error: msg.error });
    waiting.delete(msg.id);
    return;
  }
  switch (msg.method) {
    case "initialize":
      if (script.initialize === "exit") process.exit(4);
      if (script.auth_status) {
        setTimeout(() => send({ method: "_auth/status_update", params: { authStatus: script.auth_status } }), script.auth_status_delay_ms ?? 0);
      }
      return send({
        id: msg.id,
        result: {
          protocolVersion: 1,
          agentCapabilities: { loadSession: !!script.load_session, ...(script.auth_status ? { _meta: { authStatus: {} } } : {}) },
          authMethods: authMethods(msg.params?.clientCapabilities),
          agentInfo: { name: "scripted", title: "Scripted agent", version: "1.0.0" },
        },
      });
    case "authenticate":
      if (script.auth === "agent" && msg.params?.methodId === "browser") {
        writeFileSync(join(logs, "logged-in"), "yes");
        return send({ id: msg.id, result: {} });
      }
      return send({ id: msg.id, error: { code: -32602, message: `no method ${msg.params?.methodId}` } });
    case "session/new":
      if (script.auth && !loggedIn()) return send({ id: msg.id, error: { code: -32000, message: "Authentication required", ...(script.auth === "key" ? { data: { envVars: ["SCRIPTED_KEY"] } } : {}) } });
      return send({ id: msg.id, result: { sessionId: "scripted-1" } });
    case "session/load":
      return send({ id: msg.id, result: {} });
    case "session/prompt":
      return void prompt(msg.id, msg.params);
    case "session/cancel":
      log("cancel.log", "cancel\n");
      cancelled?.();
      cancelled = null;
      return;
    default:
      if (msg.id !== undefined) send({ id: msg.id, error: { code: -32601, message: `no ${msg.method}` } });
  }
}
