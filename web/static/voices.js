// The owner's voices: the Voices section of the records page (list, rename, merge, delete, through
// the /voices API), and a speaker's matched voice on a record's page, to confirm or reject.
"use strict";

function voicesView() {
  const list = el("div", { id: "voices-list" });
  const status = el("p", { class: "muted", id: "voices-status", role: "status" });
  const section = el("section", { class: "card", id: "voices" }, el("h2", {}, t("voices")),
    el("p", { class: "hint" }, t("voices_hint")), list, status);

  async function act(method, url, body) {
    const answer = await api(method, url, body);
    replace(status, answer.ok ? t("saved") : t("save_failed", { reason: reasonOf(answer) }));
    await refresh();
  }

  function row(voice, items) {
    const name = el("input", { class: "voice-name", value: voice.name, maxlength: "100",
                               "aria-label": t("voice_name") });
    const into = el("select", { class: "voice-merge-into", "aria-label": t("voice_merge_into") },
      el("option", { value: "" }, t("voice_merge_choose")),
      items.filter((other) => other.id !== voice.id)
        .map((other) => el("option", { value: String(other.id) }, other.name)));
    return el("li", { class: "voice", id: "voice-" + voice.id, "data-voice": String(voice.id) },
      name, " ",
      el("button", { type: "button", class: "voice-rename",
                     onclick: () => act("PATCH", `/voices/${voice.id}`, { name: name.value.trim() }) },
         t("voice_rename")), " ",
      el("span", { class: "muted voice-facts" },
         t("voice_facts", { recordings: voice.recordings, time: clock(voice.seconds) })), " ",
      into, " ",
      el("button", { type: "button", class: "voice-merge",
                     onclick: () => into.value && act("POST", `/voices/${voice.id}/merge`, { into: Number(into.value) }) },
         t("voice_merge")), " ",
      el("button", { type: "button", class: "voice-delete danger",
                     onclick: () => window.confirm(t("voice_delete_confirm")) && act("DELETE", `/voices/${voice.id}`) },
         t("voice_delete")));
  }

  // loaded once and after each change (not polled: a name being typed is never overwritten)
  async function refresh() {
    const answer = await api("GET", "/voices");
    if (!answer.ok) return;
    const items = answer.data.items;
    replace(list, items.length ? el("ul", { class: "voices" }, items.map((voice) => row(voice, items)))
      : el("p", { class: "muted", id: "no-voices" }, t("voices_none")));
  }

  refresh();
  return section;
}

// The names shown for a record's speakers, {label: name}, from its card (the owner's, else the
// matched voice's unless rejected: the service decides, the page only shows).
function shownSpeakerNames(card) {
  const names = {};
  for (const speaker of (card.speakers && card.speakers.list) || []) names[speaker.label] = speaker.name;
  return names;
}

// A speaker's match to one of the owner's voices, with confirm (name it so) and reject; null when
// there is nothing to decide (no match, the owner named it, or rejected it).
function voiceMatch(speaker, decide) {
  if (!speaker || !speaker.voice || speaker.given || speaker.rejected) return null;
  const label = speaker.label;
  return el("span", { class: "voice-match", id: "voice-match-" + label, "data-voice": String(speaker.voice.id) },
    t("voice_sounds_like", { name: speaker.voice.name, score: Math.round(100 * speaker.voice.score) }), " ",
    el("button", { type: "button", class: "voice-confirm", id: "voice-confirm-" + label,
                   onclick: () => decide({ speakers: { [label]: speaker.voice.name } }) }, t("voice_confirm")), " ",
    el("button", { type: "button", class: "voice-reject", id: "voice-reject-" + label,
                   onclick: () => decide({ speakers_rejected: [label] }) }, t("voice_reject")));
}
