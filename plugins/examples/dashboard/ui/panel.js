// The panel runs in a sandboxed frame with no network: it asks the app, which calls the plugin's API
// within its scopes (sessions:read) and answers by message.
const waiting = new Map();
let next = 1;
function api(method, path) {
  const id = next++;
  parent.postMessage({ dock: "api", id, method, path }, "*");
  return new Promise((resolve) => waiting.set(id, resolve));
}
addEventListener("message", (event) => {
  const { dock, id, status, body } = event.data ?? {};
  if (dock === "api" && waiting.has(id)) {
    waiting.get(id)({ status, body });
    waiting.delete(id);
  }
});
const { status, body } = await api("GET", "sessions");
const table = document.getElementById("sessions");
for (const s of status === 200 ? body : []) {
  const row = table.insertRow();
  for (const text of [s.name, `${s.location}/${s.worktree}`, s.agent_state]) {
    row.insertCell().textContent = text;
  }
}
