// An ACP client written with the official TypeScript SDK (@agentclientprotocol/sdk), driving
// `lmc acp` the way an editor does. Usage: node ts_client.mjs COMMAND_JSON CWD LINES_FILE
// It prints one JSON summary; every line lmc wrote is kept in LINES_FILE for the schema check.
import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import { PassThrough, Readable, Writable } from "node:stream";
import { client, ndJsonStream, PROTOCOL_VERSION, RequestError } from "@agentclientprotocol/sdk";

const [command, cwd, linesFile] = [JSON.parse(process.argv[2]), process.argv[3], process.argv[4]];
const agent = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "ignore"] });
const tee = new PassThrough();
agent.stdout.pipe(tee);
agent.stdout.on("data", (data) => appendFileSync(linesFile, data));
const stream = ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(tee));

const updates = [];
const asked = [];
const app = client({ name: "lmc-ts-test" })
  .onRequest("session/request_permission", async ({ params }) => {
    asked.push(params);
    return { outcome: { outcome: "selected", optionId: "allow_once" } };
  })
  .onNotification("session/update", async ({ params }) => {
    updates.push(params.update);
  });

const summary = await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request("initialize", {
    protocolVersion: PROTOCOL_VERSION,
    clientCapabilities: {},
  });
  const created = await ctx.request("session/new", { cwd, mcpServers: [] });
  const done = await ctx.request("session/prompt", {
    sessionId: created.sessionId,
    prompt: [{ type: "text", text: "compute" }],
  });
  const live = updates.length;
  await ctx.request("session/load", { sessionId: created.sessionId, cwd, mcpServers: [] });
  let unknown = null;
  try {
    await ctx.request("no/such/method", {});
  } catch (error) {
    unknown = error instanceof RequestError ? error.code : String(error);
  }
  return { init, sessionId: created.sessionId, stopReason: done.stopReason, live, unknown };
});
agent.stdin.end();
const exitCode = await new Promise((resolve) => agent.on("exit", (code) => resolve(code)));
console.log(JSON.stringify({ ...summary, updates, asked, exitCode }));
