/**
 * The WebSocket client over a unix socket that tests and benchmarks use to talk to a box's API
 * directly. It lives in `core/websocket.ts` (the agent's attach relay uses it too); this module keeps
 * the names tests import.
 *
 * @module
 */
export { ConnWebSocket as UnixWebSocket, type WsMessage } from "../core/websocket.ts";
export { connectUnixWebSocket } from "../core/ws_client.ts";
