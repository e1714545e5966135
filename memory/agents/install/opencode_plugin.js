// cmem: persistent memory for OpenCode. Written by `cmem install --opencode`; removed by
// `cmem uninstall --opencode`. Each plugin hook is handed to `cmem hook opencode <event>`
// (one JSON object on stdin); the answer is {"context": text}, {"deny": reason} or {}.
// A hook that fails or times out answers {}: memory never blocks the agent.
import { spawn } from "node:child_process";

const CMEM = "__CMEM_COMMAND__";
const TIMEOUT_MS = __CMEM_TIMEOUTS__;

function hook(event, payload) {
  return new Promise((resolve) => {
    let out = "";
    let child;
    try {
      child = spawn(CMEM, ["hook", "opencode", event], { stdio: ["pipe", "pipe", "ignore"] });
    } catch {
      resolve({});
      return;
    }
    const timer = setTimeout(() => {
      child.kill();
      resolve({});
    }, TIMEOUT_MS[event] || 10000);
    child.stdout.on("data", (chunk) => (out += chunk));
    child.on("error", () => {
      clearTimeout(timer);
      resolve({});
    });
    child.on("close", () => {
      clearTimeout(timer);
      try {
        const answer = JSON.parse(out || "{}");
        resolve(answer && typeof answer === "object" ? answer : {});
      } catch {
        resolve({});
      }
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(payload));
  });
}

export const CmemMemory = async ({ directory }) => {
  const contexts = new Map(); // sessionID -> Promise of the index for its system prompt
  const advice = new Map(); // callID -> the read gate's advisory context for that tool's output
  const parents = new Map(); // sessionID -> parent sessionID (sub-agent sessions)

  const base = (sessionID, name) => ({
    sessionID,
    cwd: directory,
    hook_event_name: name,
    agent_id: parents.has(sessionID) ? sessionID : "",
  });
  const contextFor = (sessionID) => {
    if (!contexts.has(sessionID)) {
      contexts.set(
        sessionID,
        hook("context", { ...base(sessionID, "session.created"), source: "startup" }).then(
          (answer) => answer.context || "",
        ),
      );
    }
    return contexts.get(sessionID);
  };

  return {
    event: async ({ event }) => {
      const props = event.properties || {};
      if (event.type === "session.created") {
        const info = props.info || {};
        const id = info.id || props.sessionID;
        if (info.parentID) parents.set(id, info.parentID);
        else await contextFor(id);
      } else if (event.type === "session.idle") {
        await hook("summarize", base(props.sessionID, "session.idle"));
      } else if (event.type === "session.deleted") {
        const id = (props.info || {}).id || props.sessionID;
        await hook("session-end", { ...base(id, "session.deleted"), reason: "deleted" });
        contexts.delete(id);
      }
    },
    "chat.message": async (input, output) => {
      const prompt = (output.parts || [])
        .filter((part) => part.type === "text" && !part.synthetic)
        .map((part) => part.text)
        .join("\n");
      await hook("session-init", {
        ...base(input.sessionID, "chat.message"),
        prompt,
        prompt_id: (output.message || {}).id || "",
      });
    },
    "experimental.chat.system.transform": async (input, output) => {
      if (!input.sessionID || parents.has(input.sessionID)) return;
      const context = await contextFor(input.sessionID);
      if (context) output.system.push(context);
    },
    "tool.execute.before": async (input, output) => {
      const answer = await hook("file-context", {
        ...base(input.sessionID, "tool.execute.before"),
        tool: input.tool,
        callID: input.callID,
        args: output.args,
      });
      // OpenCode turns a throw into the tool's error, which the model reads.
      if (answer.deny) throw new Error(answer.deny);
      if (answer.context) advice.set(input.callID, answer.context);
    },
    "tool.execute.after": async (input, output) => {
      const answer = await hook("observation", {
        ...base(input.sessionID, "tool.execute.after"),
        tool: input.tool,
        callID: input.callID,
        args: input.args,
        output: { title: output.title, output: output.output, metadata: output.metadata },
      });
      const extra = [advice.get(input.callID), answer.context].filter(Boolean);
      advice.delete(input.callID);
      if (extra.length && typeof output.output === "string") {
        output.output += "\n\n" + extra.join("\n\n");
      }
    },
  };
};
