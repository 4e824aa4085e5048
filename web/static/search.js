// The owner's search box: hits grouped by recording, each a time link that opens the
// record's page playing from that second (`/view/ID#t=SECONDS`), the segment highlighted.
"use strict";
const SEARCH_PAGE = 50;
const MARK_START = "<mark>", MARK_STOP = "</mark>";

// The snippet's text with its matched words in <mark> elements; everything else stays text, so a
// transcript can never inject markup.
function snippetOf(snippet) {
  const parts = [];
  for (const [index, piece] of (snippet || "").split(MARK_START).entries()) {
    if (index === 0) { parts.push(piece); continue; }
    const stop = piece.indexOf(MARK_STOP);
    if (stop < 0) { parts.push(piece); continue; }
    parts.push(el("mark", {}, piece.slice(0, stop)), piece.slice(stop + MARK_STOP.length));
  }
  return el("span", { class: "snippet" }, parts);
}

function hitLink(item) {
  const id = item.record.id;
  if (item.at === null || item.at === undefined) {
    return el("a", { href: `/view/${id}`, class: "hit-time about" }, t("search_details_hit"));
  }
  // from the first matched word, not the start of its segment (which may be half a minute long)
  return el("a", { href: `/view/${id}#t=${item.at}`, class: "hit-time", "data-start": String(item.at),
                   title: t("seek_to", { time: clock(item.at) }) }, clock(item.at));
}

function searchView() {
  const box = el("input", { type: "search", id: "search-q", name: "q", maxlength: "1000",
                            placeholder: t("search_placeholder"), "aria-label": t("search") });
  // only what one speaker said: a label (S1) or the name the owner gave it
  const speaker = el("input", { type: "text", id: "search-speaker", name: "speaker", maxlength: "100",
                                placeholder: t("search_speaker_placeholder"), "aria-label": t("search_speaker") });
  // words, meaning (passages that mean what is asked, in other words) or both fused
  const mode = el("select", { id: "search-mode", name: "mode", "aria-label": t("search_mode") },
                  ["both", "words", "meaning"].map((name) => el("option", { value: name }, t("search_mode_" + name))));
  const results = el("div", { id: "search-results", role: "status" });
  const form = el("form", { id: "search", class: "search", role: "search" }, box, " ", speaker, " ", mode, " ",
                  el("button", { type: "submit" }, t("search")));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const q = box.value;
    if (!q.trim()) { replace(results); return; }
    const who = speaker.value.trim();
    const only = who ? `&speaker=${encodeURIComponent(who)}` : "";
    const how = `&mode=${encodeURIComponent(mode.value)}`;
    const answer = await api("GET", `/search?limit=${SEARCH_PAGE}&q=${encodeURIComponent(q)}${only}${how}`);
    if (!answer.ok) { replace(results, el("p", { class: "error" }, reasonOf(answer))); return; }
    const { items, total, total_capped: capped } = answer.data;
    // how the answer was made (meaning unavailable here, records only words find), as the API says it
    const notes = (answer.data.notes || []).map((note) => el("p", { class: "muted search-note" }, note));
    results.dataset.mode = mode.value;  // which mode the hits shown were found in
    if (!items.length) {
      replace(results, notes, el("p", { class: "muted", id: "search-none" }, t("search_none")));
      return;
    }
    const groups = new Map();
    for (const item of items) {
      if (!groups.has(item.record.id)) groups.set(item.record.id, { record: item.record, hits: [] });
      groups.get(item.record.id).hits.push(item);
    }
    replace(results, notes,
      el("p", { class: "muted", id: "search-total" }, t(capped ? "search_total_capped" : "search_total", { shown: items.length, total })),
      [...groups.values()].map((group) => el("div", { class: "hit-group", id: "hits-" + group.record.id },
        el("h3", {}, el("a", { href: `/view/${group.record.id}` },
                        group.record.title || t("untitled", { id: group.record.id }))),
        el("ul", { class: "hits" }, group.hits.map((item) => {
          // a passage found by meaning alone shares no word with the query: the hit says so
          const byMeaning = (item.matched || []).length === 1 && item.matched[0] === "meaning";
          return el("li", { class: byMeaning ? "hit by-meaning" : "hit", title: byMeaning ? t("search_by_meaning") : null },
                    hitLink(item), " ", snippetOf(item.snippet));
        })))));
  });
  return el("section", { class: "card", id: "search-card" }, el("h2", {}, t("search")), form, results);
}

// On a record's page: the second the address asks for (`#t=83.5`), or null.
function askedSecond() {
  const found = /^#t=(\d+(?:\.\d+)?)$/.exec(window.location.hash);
  return found ? Number(found[1]) : null;
}

// Play from the asked second and highlight its segment (once the transcript is shown).
function playAskedSecond(audio, transcript) {
  const second = askedSecond();
  if (second === null) return;
  let hit = null;
  for (const item of transcript.children) {
    if (Number(item.dataset.start) <= second + 0.001) hit = item;
  }
  if (hit) { hit.classList.add("hit"); hit.scrollIntoView({ block: "center" }); }
  const start = () => { audio.currentTime = second; audio.play().catch(() => {}); };
  if (audio.readyState >= 1) start(); else audio.addEventListener("loadedmetadata", start, { once: true });
}
