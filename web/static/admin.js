// The service owner's panel: figures, owners' use of their quotas, halted records with Resume,
// and a record's journal.
// It shows owners' names and record metadata only; the panel API gives it nothing else.
"use strict";
const PANEL_POLL_MS = 2000;
const OWNERS_POLL_MS = 30000;

function recordLabel(item) {
  return "#" + item.id + " " + (item.title || item.source_name || "");
}

function resumeButton(id, status, after) {
  return el("button", { type: "button", class: "resume", "data-record": String(id), onclick: async (event) => {
    event.target.disabled = true;
    const answer = await api("POST", `/admin/api/records/${id}/resume`);
    replace(status, answer.ok ? t("resumed") : t("resume_failed", { reason: reasonOf(answer) }));
    status.className = answer.ok ? "resume-status done" : "resume-status error";
    await after();
  } }, t("resume"));
}

function figuresOf(status) {
  const figure = (key, value) => el("div", { class: "figure", "data-figure": key },
    el("div", { class: "value" }, String(value)), el("div", { class: "label" }, t("fig_" + key)));
  const oldest = Math.max(0, ...status.stages.map((row) => row.oldest_eligible_seconds || 0));
  return [
    el("div", { class: "figures", id: "totals" },
      ["active", "claimed", "waiting", "halted"].map((key) => figure(key, status.totals[key])),
      figure("oldest", oldest ? clock(oldest) : "–")),
    el("table", { id: "stages" },
      el("thead", {}, el("tr", {}, [t("col_stage"), t("fig_active"), t("fig_claimed"), t("fig_waiting"),
                                    t("fig_halted"), t("fig_oldest")].map((h) => el("th", {}, h)))),
      el("tbody", {}, status.stages.map((row) => el("tr", { "data-stage": row.stage },
        el("td", {}, row.stage + " (" + stageText(row.stage) + ")"), el("td", {}, row.active), el("td", {}, row.claimed),
        el("td", {}, row.waiting), el("td", {}, row.halted),
        el("td", {}, row.oldest_eligible_seconds ? clock(row.oldest_eligible_seconds) : "–")))))];
}

function ownersOf(owners) {
  const limit = (value, unit) => (value === null ? "–" : value + " " + unit);
  return el("table", { id: "owner-usage" },
    el("thead", {}, el("tr", {}, [t("col_owner"), t("col_records"), t("col_hours"), t("col_stored"),
                                  t("col_quota")].map((h) => el("th", {}, h)))),
    el("tbody", {}, owners.map((o) => el("tr", { "data-owner": o.name },
      el("td", {}, o.name), el("td", {}, String(o.records)), el("td", {}, o.audio_hours.toFixed(2)),
      el("td", {}, (o.stored_bytes / 1048576).toFixed(1) + " MB"),
      el("td", {}, limit(o.quota.hours, "h") + " / " + limit(o.quota.storage_mb, "MB"))))));
}

function panelView(root) {
  const figures = el("div", { id: "figures" });
  const owners = el("div", { id: "owners" });
  const halted = el("div", { id: "halted" });
  const problem = el("p", { class: "error", role: "alert" });
  replace(root, problem,
    el("section", { class: "card" }, el("h1", {}, t("figures")), figures),
    el("section", { class: "card" }, el("h2", {}, t("owners")), owners),
    el("section", { class: "card" }, el("h2", {}, t("halted_records")), halted));

  let ownersAt = 0;
  async function refresh() {
    // owners' use sums every record: read it when the panel opens and every OWNERS_POLL_MS only
    const ownersDue = Date.now() - ownersAt >= OWNERS_POLL_MS;
    const [status, list, people] = await Promise.all([api("GET", "/admin/api/status"),
      api("GET", "/admin/api/halted?limit=200"), ownersDue ? api("GET", "/admin/api/owners") : { ok: true }]);
    if (!status.ok || !list.ok || !people.ok) {
      replace(problem, t("panel_unavailable", { reason: reasonOf([status, list, people].find((a) => !a.ok)) }));
      return;
    }
    replace(problem);
    replace(figures, figuresOf(status.data));
    if (ownersDue) {
      ownersAt = Date.now();
      replace(owners, ownersOf(people.data.items));
    }
    if (!list.data.items.length) {
      replace(halted, el("p", { class: "muted", id: "no-halted" }, t("no_halted")));
      return;
    }
    replace(halted, el("table", { class: "halted" },
      el("thead", {}, el("tr", {}, [t("col_record"), t("col_owner"), t("col_stage"), t("col_reason"), t("col_error"),
                                    t("col_attempts"), t("col_age"), ""].map((h) => el("th", {}, h)))),
      el("tbody", {}, list.data.items.map((item) => {
        const status = el("span", { class: "resume-status" });
        return el("tr", { id: "halted-" + item.id, "data-reason": item.reason },
          el("td", {}, el("a", { href: "/admin/record/" + item.id }, recordLabel(item))),
          el("td", {}, item.owner),
          el("td", {}, stageText(item.stage)),
          el("td", { title: item.reason }, reasonText(item.reason)),
          el("td", {}, el("pre", { class: "detail" }, item.error || "")),
          el("td", {}, String(item.attempts)),
          el("td", {}, age(item.halted_at)),
          el("td", {}, resumeButton(item.id, status, refresh), " ", status));
      }))));
  }
  every(PANEL_POLL_MS, refresh);
}

function journalView(root, id) {
  const facts = el("dl", { class: "facts", id: "record-facts" });
  const actions = el("div", { id: "actions" });
  const journal = el("div", { id: "journal" });
  const heading = el("h1", {}, t("journal_of", { id }));
  replace(root, el("p", {}, el("a", { href: "/admin" }, t("back_panel"))),
    el("section", { class: "card" }, heading, facts, actions),
    el("section", { class: "card" }, el("h2", {}, t("journal")), journal));
  const status = el("span", { class: "resume-status" });

  async function refresh() {
    const [record, events] = await Promise.all([api("GET", `/admin/api/records/${id}`),
                                                api("GET", `/admin/api/records/${id}/events`)]);
    if (record.ok) {
      const card = record.data;
      const fact = (label, value) => [el("dt", {}, label), el("dd", {}, value)];
      replace(facts, fact(t("col_owner"), card.owner), fact(t("col_title"), card.title || card.source_name || "–"),
        fact(t("col_stage"), stageText(card.stage)), fact(t("col_attempts"), String(card.attempts)),
        fact(t("col_state"), card.halt ? t("halted", { reason: reasonText(card.halt.reason) })
                                       : card.stage === "done" ? t("stage_done") : t(card.working ? "working" : "queued")),
        card.halt ? fact(t("col_error"), el("pre", { class: "detail" }, card.halt.error || "")) : null);
      replace(actions, card.halt ? resumeButton(id, status, refresh) : null, " ", status);
    } else {
      replace(facts, el("p", { class: "muted" }, t("not_found")));
      replace(actions);
    }
    if (!events.ok) { replace(journal); return; }
    replace(journal, el("table", { class: "journal" },
      el("thead", {}, el("tr", {}, [t("col_at"), t("col_origin"), t("col_kind"), t("col_stage"), t("col_detail")]
        .map((h) => el("th", {}, h)))),
      el("tbody", {}, events.data.events.map((event) => el("tr", { class: "event", "data-kind": event.kind },
        el("td", {}, when(event.at)), el("td", {}, event.origin), el("td", {}, event.kind),
        el("td", {}, event.stage || "–"),
        el("td", {}, el("pre", { class: "detail" }, event.detail ? JSON.stringify(event.detail) : "")))))));
  }
  every(PANEL_POLL_MS, refresh);
}

const panelRoot = document.getElementById("app");
if (panelRoot && PAGE.view === "admin") panelView(panelRoot);
if (panelRoot && PAGE.view === "admin-record") journalView(panelRoot, PAGE.record);
