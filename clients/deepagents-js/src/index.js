// SPDX-License-Identifier: MIT
// yuxi-sandbox-deepagents: the yuxi-sandbox service as a deepagents
// sandbox backend. See README.md and docs/deepagents.md.
export { YuxiSandbox, EMPTY_CONTENT_WARNING, bridgesUsed } from "./sandbox.js";
export { SessionBusyError, SessionLimitError, SessionNotFoundError, YuxiSandboxError } from "./http.js";
export { Processes } from "./processes.js";
export { Sessions, SessionStream } from "./sessions.js";
