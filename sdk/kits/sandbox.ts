/**
 * `spar/sdk/sandbox`: the sandbox every process a move starts runs in (bubblewrap with limits and
 * an egress proxy on Linux, sandbox-exec on macOS, or refused when neither is there and `[sandbox]
 * mode` is "required"), and the network a turn's grants give such a process. The shell and desktop
 * moves start their processes through these alone.
 *
 * @example
 * import { createSandbox, egressOf } from "spar/sdk/sandbox";
 * const sandbox = createSandbox(api.config.sandbox, api.home, api.env);
 */
export { egressOf } from "../../lib/sandbox/grants.js";
export {
  type CommandResult,
  createSandbox,
  type EgressRules,
  findProgram,
  type Sandbox,
  type SandboxedCommand,
  type SandboxKind,
  type SandboxStatus,
} from "../../lib/sandbox/index.js";
