// Loaded by the app from /v1/plugins/notify/ui/panel.js; reads the plugin's own function.
const token = sessionStorage.getItem("dock-token");
const answer = await fetch("/v1/plugins/notify/fn/status", { headers: { authorization: `Bearer ${token}` } });
document.getElementById("sent").textContent = String((await answer.json()).sent);
