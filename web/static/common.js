// Shared by the owner's page and the panel: strings, DOM building, API calls, formatting.
"use strict";
const S = JSON.parse(document.getElementById("strings").textContent);
const PAGE = JSON.parse(document.getElementById("page").textContent);

function t(key, values) {
  let text = Object.prototype.hasOwnProperty.call(S, key) ? S[key] : key;
  for (const [name, value] of Object.entries(values || {})) text = text.split("{" + name + "}").join(String(value));
  return text;
}

// Build an element; strings become text nodes (never HTML), so no data can inject markup.
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "class") node.className = value;
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function replace(target, ...children) {
  target.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
}

// A call to the service's JSON API; the session cookie stands for the token, the CSRF token
// goes with every change. A lost session (401) shows the sign-in form again. `extra`: more
// headers (tus's Tus-Resumable on /uploads).
async function api(method, url, body, extra) {
  const headers = { Accept: "application/json", ...extra };
  if (method !== "GET") headers["X-CSRF-Token"] = PAGE.csrf;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let answer;
  try {
    answer = await fetch(url, { method, headers, credentials: "same-origin",
                                body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (error) {
    return { ok: false, status: 0, data: { message: String(error) } };
  }
  if (answer.status === 401) { window.location.reload(); return { ok: false, status: 401, data: {} }; }
  let data = null;
  const type = answer.headers.get("content-type") || "";
  if (type.includes("json")) { try { data = await answer.json(); } catch (_) { data = null; } }
  else data = await answer.text();
  return { ok: answer.ok, status: answer.status, data };
}

function reasonOf(answer) {
  const data = answer.data;
  if (data && typeof data === "object" && data.message) return data.message;
  return answer.status ? "HTTP " + answer.status : t("upload_failed");
}

function clock(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  const whole = Math.max(0, Math.floor(seconds));
  const h = Math.floor(whole / 3600), m = Math.floor((whole % 3600) / 60), s = whole % 60;
  const pad = (n) => String(n).padStart(2, "0");
  return h ? `${h}:${pad(m)}:${pad(s)}` : `${m}:${pad(s)}`;
}

function age(iso) {
  if (!iso) return "–";
  const seconds = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (seconds < 90) return t("ago_s", { n: Math.round(seconds) });
  if (seconds < 5400) return t("ago_m", { n: Math.round(seconds / 60) });
  if (seconds < 172800) return t("ago_h", { n: Math.round(seconds / 3600) });
  return t("ago_d", { n: Math.round(seconds / 86400) });
}

function when(iso) {
  return iso ? new Date(iso).toLocaleString(document.documentElement.lang) : "–";
}

function reasonText(reason) {
  const key = "reason_" + reason;
  return Object.prototype.hasOwnProperty.call(S, key) ? S[key] : t("reason_unknown", { reason });
}

function stageText(stage) {
  const key = "stage_" + stage;
  return Object.prototype.hasOwnProperty.call(S, key) ? S[key] : stage;
}

// Run `step` now and again every `ms` milliseconds after it finishes, for as long as the page lives.
function every(ms, step) {
  const run = async () => {
    try { await step(); } finally { setTimeout(run, ms); }
  };
  run();
}

for (const button of document.querySelectorAll("button[data-lang]")) {
  button.addEventListener("click", () => {
    document.cookie = `lang=${button.dataset.lang}; path=/; max-age=31536000; SameSite=Strict`;
    window.location.reload();
  });
}
