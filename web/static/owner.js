// The owner's page: upload, the list of records (live), and a record's page.
"use strict";
const POLL_MS = 1500;
const PAGE_SIZE = 20;
// A file goes up in pieces of this size: each is kept by the service before it is acknowledged,
// so a cut costs at most one piece.
const UPLOAD_CHUNK_BYTES = 4 * 1024 * 1024;
// pauses before each new try after a failed piece (no answer, 5xx, 409, 423), some two minutes
// in all, short first (a service restarting is back in seconds); any progress starts the count
// again, and when they run out the row says how to go on
const UPLOAD_RETRY_MS = [0, 1000, 1000, 2000, 2000, 5000, 10000, 15000, 30000, 60000];

function titleOf(card) {
  return card.title || card.source_name || t("untitled", { id: card.id });
}

function stateOf(card) {
  if (card.halt) return el("span", { class: "state halted", title: card.halt.error || "" },
                           t("halted", { reason: reasonText(card.halt.reason) }));
  if (card.retry_in_seconds) return el("span", { class: "state paused" },
                                       t("retry_in", { seconds: Math.ceil(card.retry_in_seconds) }));
  if (card.stage === "done") return el("span", { class: "state done" }, t("stage_done"));
  return el("span", { class: "state " + (card.working ? "working" : "queued") }, t(card.working ? "working" : "queued"));
}

// a recording the service finished after its page stopped sending (the tab closed mid-recording)
function cutShortOf(card) {
  return card.cut_short ? [" ", el("span", { class: "badge cut-short", title: t("cut_short_hint") }, t("cut_short"))] : null;
}

function progressOf(card) {
  const total = card.duration_seconds;
  if (card.stage === "done") return el("span", { class: "progress-text" }, clock(total));
  if (card.progress_seconds !== null && card.progress_seconds !== undefined && total) {
    return el("span", { class: "progress-cell" },
      el("progress", { max: String(total), value: String(Math.min(card.progress_seconds, total)) }),
      el("span", { class: "progress-text" }, t("progress_of", { done: clock(card.progress_seconds), total: clock(total) })));
  }
  return el("span", { class: "progress-text muted" }, total ? clock(total) : "–");
}

// --- the list of records, with uploads -------------------------------------------------------

function recordsView(root) {
  let offset = 0;
  const table = el("div", { id: "records" });
  const pager = el("div", { class: "pager" });
  const uploads = el("ul", { id: "uploads", class: "uploads" });
  const picker = el("input", { type: "file", id: "file-picker", multiple: true, accept: "audio/*,video/*", class: "hidden" });
  const zone = el("section", { id: "drop-zone", class: "card drop" },
    el("h2", {}, t("upload")),
    el("p", { class: "hint" }, t("upload_hint")),
    el("label", { for: "file-picker", class: "button" }, t("choose_files")),
    picker, recorderView(uploads, () => { offset = 0; refresh(); }), uploads);
  const problem = el("p", { class: "error", id: "problem", role: "alert" });
  replace(root, searchView(), zone, el("section", { class: "card" }, el("h1", {}, t("records")), problem, table, pager),
          voicesView());

  picker.addEventListener("change", () => { queue([...picker.files]); picker.value = ""; });
  for (const name of ["dragenter", "dragover"]) {
    zone.addEventListener(name, (event) => { event.preventDefault(); zone.classList.add("over"); });
  }
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    queue([...event.dataTransfer.files]);
  });

  let chain = Promise.resolve();
  function queue(files) {
    for (const file of files) {
      const bar = el("progress", { max: "100", value: "0" });
      const status = el("span", { class: "status" }, t("uploading"));
      const row = el("li", { class: "upload", "data-name": file.name }, el("span", { class: "name" }, file.name), bar, status);
      uploads.append(row);
      const resumable = window.tus && tus.isSupported;
      chain = chain.then(() => (resumable ? sendResumable : send)(file, bar, status, row));
    }
  }

  function accepted(id, bar, status, row) {
    bar.value = 100;
    row.classList.add("accepted");
    row.dataset.record = String(id);
    replace(status, el("a", { href: "/view/" + id }, t("accepted")));
    offset = 0;
    refresh();
  }

  // A file as a tus upload (tus-js-client, POST /uploads then PATCHes of UPLOAD_CHUNK_BYTES): a
  // failed piece is tried again from the offset the service answers to HEAD, a stopped service
  // included; the upload's address is kept in localStorage under the file's fingerprint (name,
  // type, size, date), so the same file chosen again after a reload goes on from where it stopped.
  function sendResumable(file, bar, status, row) {
    return new Promise((resolve) => {
      let record = null;
      const upload = new tus.Upload(file, {
        endpoint: "/uploads",
        chunkSize: UPLOAD_CHUNK_BYTES,
        retryDelays: UPLOAD_RETRY_MS,
        metadata: { filename: file.name },
        headers: { "X-CSRF-Token": PAGE.csrf },
        removeFingerprintOnSuccess: true,
        onAfterResponse: (_request, response) => {
          const named = response.getHeader("Upload-Record");
          if (named) record = Number(named);
        },
        onProgress: (sent, total) => {
          bar.value = total ? Math.floor((100 * sent) / total) : 0;
          if (upload.url) row.dataset.upload = new URL(upload.url, window.location.href).pathname;
        },
        onError: (error) => {
          const answer = error.originalResponse;
          const code = answer ? answer.getStatus() : 0;
          if (code === 401) { window.location.reload(); return resolve(); }
          row.classList.add("refused");
          if (code >= 400 && code < 500) {
            let reason = "HTTP " + code;
            try { reason = JSON.parse(answer.getBody()).message || reason; } catch (_) { /* not JSON */ }
            replace(status, t("refused", { reason }));
          } else {
            replace(status, t("upload_stopped", { percent: bar.value }));
          }
          resolve();
        },
        onSuccess: async () => {
          const outcome = record === null ? await recordOfUpload(upload.url) : { record };
          if (outcome.record !== undefined) accepted(outcome.record, bar, status, row);
          else {
            row.classList.add("refused");
            replace(status, outcome.reason ? t("refused", { reason: outcome.reason }) : t("upload_failed"));
          }
          resolve();
        },
      });
      upload.findPreviousUploads().then((previous) => {
        if (previous.length) {
          upload.resumeFromPreviousUpload(previous[0]);
          row.dataset.resumed = "true";
          replace(status, t("upload_resuming"));
        }
        upload.start();
      });
    });
  }

  // What a finished upload became, as GET /uploads/{id} says: `{record}`, or `{reason}` when the
  // service refused its bytes (an empty file is finished without a PATCH, so it is refused here).
  async function recordOfUpload(url) {
    for (let tries = 0; tries < 120; tries++) {
      const answer = await api("GET", new URL(url, window.location.href).pathname, undefined, { "Tus-Resumable": TUS_VERSION });
      if (answer.ok && answer.data && answer.data.record !== null && answer.data.record !== undefined) return { record: answer.data.record };
      if (answer.status >= 400 && answer.status < 500) return { reason: reasonOf(answer) };
      await new Promise((wait) => setTimeout(wait, 500));
    }
    return {};
  }

  // The plain upload (POST /records, one request), where tus-js-client cannot run.
  function send(file, bar, status, row) {
    return new Promise((resolve) => {
      const form = new FormData();
      form.append("file", file, file.name);
      const xhr = new XMLHttpRequest();
      xhr.open("POST", "/records");
      xhr.setRequestHeader("X-CSRF-Token", PAGE.csrf);
      xhr.setRequestHeader("Accept", "application/json");
      xhr.upload.addEventListener("progress", (event) => {
        if (event.lengthComputable) bar.value = Math.round((100 * event.loaded) / event.total);
      });
      xhr.addEventListener("load", () => {
        let data = {};
        try { data = JSON.parse(xhr.responseText); } catch (_) { data = {}; }
        if (xhr.status === 201) {
          accepted(data.id, bar, status, row);
        } else {
          if (xhr.status === 401) { window.location.reload(); return resolve(); }
          row.classList.add("refused");
          replace(status, t("refused", { reason: data.message || "HTTP " + xhr.status }));
        }
        resolve();
      });
      xhr.addEventListener("error", () => {
        row.classList.add("refused");
        replace(status, t("upload_failed"));
        resolve();
      });
      xhr.send(form);
    });
  }

  async function refresh() {
    const answer = await api("GET", `/records?limit=${PAGE_SIZE}&offset=${offset}`);
    replace(problem, answer.ok ? null : reasonOf(answer));
    if (!answer.ok) return;
    const { items, total, usage } = answer.data;
    if (!items.length && offset > 0) { offset = Math.max(0, offset - PAGE_SIZE); return refresh(); }
    if (!items.length) {
      replace(table, el("p", { class: "muted", id: "no-records" }, t("none_yet")));
    } else {
      replace(table, el("table", { class: "records" },
        el("thead", {}, el("tr", {}, [t("col_title"), t("col_stage"), t("col_progress"), t("col_attempts"),
                                      t("col_state"), t("col_added")].map((h) => el("th", {}, h)))),
        el("tbody", {}, items.map((card) => el("tr", {
            id: "record-" + card.id, class: "record", "data-stage": card.stage,
            "data-halted": card.halt ? card.halt.reason : null },
          el("td", {}, el("a", { href: "/view/" + card.id, class: "title" }, titleOf(card)), cutShortOf(card)),
          el("td", { class: "stage" }, stageText(card.stage)),
          el("td", {}, progressOf(card)),
          el("td", { class: "attempts" }, card.attempts ? t("failures", { count: card.attempts }) : "0"),
          el("td", {}, stateOf(card)),
          el("td", { class: "muted" }, when(card.created_at)))))));
    }
    replace(pager,
      el("button", { type: "button", id: "newer", disabled: offset === 0,
                     onclick: () => { offset = Math.max(0, offset - PAGE_SIZE); refresh(); } }, t("previous")),
      el("span", { class: "muted" }, total ? t("page_of", { from: offset + 1, to: offset + items.length, total }) : ""),
      el("button", { type: "button", id: "older", disabled: offset + items.length >= total,
                     onclick: () => { offset += PAGE_SIZE; refresh(); } }, t("next")),
      el("p", { class: "muted", id: "usage" }, usageOf(usage)));
  }

  every(POLL_MS, refresh);
}

// --- one record ------------------------------------------------------------------------------

// what the owner uses of its quota: audio hours and stored MB, with the limits
function usageOf(usage) {
  const limit = (value, unit) => (value === null ? "–" : value + " " + unit);
  return t("usage_line", { hours: usage.audio_hours.toFixed(2), mb: (usage.stored_bytes / 1048576).toFixed(1),
                           quota: limit(usage.quota.hours, "h") + " / " + limit(usage.quota.storage_mb, "MB") });
}

function recordView(root, id) {
  const heading = el("h1", { id: "record-title" });
  const facts = el("dl", { class: "facts" });
  const state = el("div", { id: "record-state" });
  const audio = el("audio", { id: "player", controls: true, preload: "metadata", src: `/records/${id}/audio` });
  const noAudio = el("p", { class: "muted hidden", id: "no-audio" }, t("no_audio"));
  audio.addEventListener("error", () => noAudio.classList.remove("hidden"));
  const transcript = el("ol", { id: "transcript", class: "segments" });
  // a translated record (task translate): its English text beside the original, segment times
  // on both sides, each column headed by its language (hidden for a plain transcription)
  const english = el("ol", { id: "english", class: "segments", lang: "en" });
  const originalHeading = el("h3", { class: "hidden", id: "original-heading" }, t("original_text"));
  const englishColumn = el("div", { class: "column hidden", id: "english-column" },
    el("h3", {}, t("english_text")), english);
  const englishDownloads = el("p", { id: "english-downloads", class: "downloads hidden" }, t("english_downloads") + ":",
    ["txt", "srt", "vtt", "json"].map((format) => el("a", {
      href: `/records/${id}/text?version=english` + (format === "txt" ? "" : "&format=" + format),
      download: `record-${id}-english.${format}`, id: "english-download-" + format, class: "button" }, format)));
  const texts = el("div", { class: "texts", id: "texts" },
    el("div", { class: "column" }, originalHeading, transcript), englishColumn);
  // the edit mode: click a segment's text, type, save (the owner's corrections, kept apart from
  // the recognised text: PATCH /records/{id}/text)
  const correctToggle = el("button", { type: "button", id: "correct-text", class: "hidden" }, t("correct_text"));
  const correctStatus = el("span", { id: "correct-status", class: "muted", role: "status" });
  const correctHint = el("p", { class: "hint hidden", id: "correct-hint" }, t("correct_hint"));
  const transcriptNote = el("p", { class: "muted", id: "transcript-note" }, t("transcript_pending"));
  const speakersNote = el("p", { class: "muted hidden", id: "speakers-note", role: "status" });
  const speakerFields = el("div", { class: "speaker-fields" });
  const speakersSaved = el("span", { id: "speakers-status", class: "muted", role: "status" });
  const speakersForm = el("form", { id: "speaker-names", class: "edit" },
    el("p", { class: "hint" }, t("speakers_hint")), speakerFields,
    el("div", {}, el("button", { type: "submit" }, t("save_names")), " ", speakersSaved));
  const speakersCard = el("section", { class: "card hidden", id: "speakers-card" },
    el("h2", {}, t("speakers")), speakersForm);
  const downloads = el("p", { id: "downloads", class: "downloads hidden" }, t("downloads") + ":",
    ["txt", "srt", "vtt", "json"].map((format) => el("a", {
      href: `/records/${id}/text` + (format === "txt" ? "" : "?format=" + format),
      download: `record-${id}.${format}`, id: "download-" + format, class: "button" }, format)));
  const title = el("input", { id: "edit-title", name: "title", maxlength: "500" });
  const summary = el("textarea", { id: "edit-summary", name: "summary", rows: "3", maxlength: "20000" });
  const topics = el("input", { id: "edit-topics", name: "topics" });
  const saved = el("span", { id: "save-status", class: "muted", role: "status" });
  const form = el("form", { id: "edit", class: "edit" },
    el("label", { for: "edit-title" }, t("title")), title,
    el("label", { for: "edit-summary" }, t("summary")), summary,
    el("label", { for: "edit-topics" }, t("topics")), topics,
    el("div", {}, el("button", { type: "submit" }, t("save")), " ", saved));
  const deleteStatus = el("span", { class: "error", id: "delete-status", role: "alert" });
  const remove = el("button", { type: "button", id: "delete", class: "danger" }, t("delete"));

  replace(root,
    el("p", {}, el("a", { href: "/", id: "back" }, t("back"))),
    el("section", { class: "card" }, heading, state, facts),
    el("section", { class: "card" }, el("h2", {}, t("player")), audio, noAudio),
    el("section", { class: "card" }, el("h2", {}, t("transcript")), transcriptNote, speakersNote,
       el("p", {}, correctToggle, " ", correctStatus), correctHint, texts, downloads, englishDownloads),
    speakersCard,
    el("section", { class: "card" }, el("h2", {}, t("edit")), form),
    el("section", { class: "card" }, remove, " ", deleteStatus));

  let loaded = false, filled = false, gone = false, correcting = false;
  // the labels the transcript carries, the names shown for them, the owner's own names, each
  // speaker as the card lists it (its voice match), where finding them stands
  let labels = [], names = {}, given = {}, listed = [], speakersState = null;

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const answer = await api("PATCH", `/records/${id}`, {
      title: title.value, summary: summary.value,
      topics: topics.value.split(",").map((x) => x.trim()).filter(Boolean) });
    replace(saved, answer.ok ? t("saved") : t("save_failed", { reason: reasonOf(answer) }));
    if (answer.ok) show(answer.data);
  });

  speakersForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const typed = {};
    for (const input of speakerFields.querySelectorAll("input")) typed[input.name] = input.value.trim();
    await decide({ speakers: typed });
  });

  // the owner's names, a match confirmed or rejected: saved, then every label shown anew
  async function decide(change) {
    const answer = await api("PATCH", `/records/${id}`, change);
    replace(speakersSaved, answer.ok ? t("saved") : t("save_failed", { reason: reasonOf(answer) }));
    if (answer.ok) { show(answer.data); nameSpeakers(answer.data); showSpeakerForm(); }
  }

  // Every label on the page under the names shown now (no reload: the chips are renamed).
  function nameSpeakers(card) {
    names = shownSpeakerNames(card);
    given = (card.speakers && card.speakers.names) || {};
    const before = JSON.stringify(listed);
    listed = (card.speakers && card.speakers.list) || [];
    for (const chip of transcript.querySelectorAll(".speaker[data-speaker]")) {
      const shown = speakerName(chip.dataset.speaker, names);
      if (chip.textContent !== shown) chip.textContent = shown;
    }
    return before !== JSON.stringify(listed);
  }

  function showSpeakerForm() {
    speakersCard.classList.toggle("hidden", labels.length === 0);
    replace(speakerFields, labels.map((label) => el("div", { class: "speaker-field" },
      el("label", { for: "speaker-name-" + label }, speakerChip(label, {})),
      el("input", { id: "speaker-name-" + label, name: label, maxlength: "100", value: given[label] || "",
                    placeholder: speakerName(label, names) }),
      voiceMatch(listed.find((speaker) => speaker.label === label), decide))));
  }

  remove.addEventListener("click", async () => {
    if (!window.confirm(t("delete_confirm"))) return;
    const answer = await api("DELETE", `/records/${id}`);
    if (answer.ok) { gone = true; window.location.assign("/"); }
    else replace(deleteStatus, t("delete_failed", { reason: reasonOf(answer) }));
  });

  function show(card) {
    replace(heading, titleOf(card));
    document.title = titleOf(card) + " · " + t("app");
    replace(state, el("span", { class: "stage", id: "record-stage", "data-stage": card.stage }, stageText(card.stage)),
      card.stage === "done" ? null : [" · ", stateOf(card)], " · ", progressOf(card),
      card.attempts ? " · " + t("failures", { count: card.attempts }) : "",
      card.halt ? el("p", { class: "muted" }, t("halted_note")) : null);
    const fact = (label, value) => [el("dt", {}, label), el("dd", {}, value)];
    replace(facts, fact(t("duration"), clock(card.duration_seconds)), fact(t("added"), when(card.created_at)),
      card.cut_short ? fact(t("cut_short"), el("span", { id: "cut-short" }, t("cut_short_hint"))) : null,
      card.language ? fact(t("language_of_audio"), card.language_probability == null ? card.language
        : card.language + " (" + Math.round(100 * card.language_probability) + " %)") : null,
      card.prompt ? fact(t("prompt_of_record"), card.prompt) : null,
      card.task === "translate" ? fact(t("task_of_record"), el("span", { id: "record-task" }, t("task_translate"))) : null,
      card.corrections && card.corrections.count ? fact(t("corrections"), el("span", { id: "corrections-count" },
        t("corrections_count", { count: card.corrections.count, detached: card.corrections.detached.length }))) : null);
    const note = loaded ? speakersNoteOf(card, labels.length > 0) : null;
    speakersNote.classList.toggle("hidden", note === null);
    speakersNote.dataset.state = card.speakers ? card.speakers.state : "";
    if (note !== null && speakersNote.textContent !== note) replace(speakersNote, note);
    if (card.audio === "expired" && !audio.classList.contains("hidden")) {
      // retention deleted the original: say so instead of a player that cannot play
      audio.removeAttribute("src");
      audio.classList.add("hidden");
      noAudio.id = "audio-expired";
      replace(noAudio, t("audio_expired"));
      noAudio.classList.remove("hidden");
    }
    if (!filled) {
      title.value = card.title || ""; summary.value = card.summary || ""; topics.value = (card.topics || []).join(", ");
      filled = true;
    }
  }

  correctToggle.addEventListener("click", () => {
    correcting = !correcting;
    transcript.classList.toggle("correcting", correcting);
    correctHint.classList.toggle("hidden", !correcting);
    replace(correctToggle, t(correcting ? "correct_done" : "correct_text"));
    if (!correcting) for (const open of transcript.querySelectorAll(".correction")) open.remove();
  });

  // One segment's text as a field with Save and Cancel; saved, the transcript shows the answer.
  function correctSegment(item, index, text) {
    if (!correcting || item.querySelector(".correction")) return;
    const field = el("input", { class: "correction-text", value: text, maxlength: "2000", "aria-label": t("correct_text") });
    const cancel = el("button", { type: "button", class: "cancel-correction" }, t("cancel"));
    const save = el("button", { type: "submit", class: "save-correction" }, t("save"));
    const editor = el("form", { class: "correction" }, field, " ", save, " ", cancel);
    cancel.addEventListener("click", () => editor.remove());
    editor.addEventListener("submit", async (event) => {
      event.preventDefault();
      const answer = await api("PATCH", `/records/${id}/text`, { segments: [{ index, text: field.value.trim() }] });
      replace(correctStatus, answer.ok ? t("saved") : t("save_failed", { reason: reasonOf(answer) }));
      if (answer.ok) showSegments(answer.data.segments || []);
    });
    item.append(editor);
    field.focus();
  }

  async function showTranscript(card) {
    const answer = await api("GET", `/records/${id}/text?format=json`);
    if (!answer.ok) return;
    if (card.task === "translate") await showEnglish();
    const first = !loaded;
    loaded = true;
    showSegments(answer.data.segments || []);
    downloads.classList.remove("hidden");
    correctToggle.classList.remove("hidden");
    if (first) playAskedSecond(audio, transcript);  // a search hit's link: play from its second (search.js)
  }

  // The English text beside the original: read only (corrections are of the original).
  async function showEnglish() {
    const answer = await api("GET", `/records/${id}/text?format=json&version=english`);
    if (!answer.ok) return;
    texts.classList.add("side-by-side");
    for (const shown of [originalHeading, englishColumn, englishDownloads]) shown.classList.remove("hidden");
    replace(english, (answer.data.segments || []).map((segment) => el("li", {
        class: "segment", "data-start": String(segment.start) },
      el("button", { type: "button", class: "time", title: t("seek_to", { time: clock(segment.start) }),
                     onclick: () => { audio.currentTime = segment.start; audio.play().catch(() => {}); } },
         clock(segment.start)),
      el("span", { class: "text" }, (segment.text || "").trim()))));
  }

  function showSegments(segments) {
    transcriptNote.classList.toggle("hidden", segments.length > 0);
    replace(transcriptNote, t("transcript_empty"));
    labels = [...new Set(segments.map((segment) => segment.speaker).filter(Boolean))]
      .sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)));
    // a speaker's label opens each of its turns; every segment of the turn carries its colour.
    // A segment's place for an edit is its `index` (pieces a change of speaker cut it into keep
    // it); a detached correction (its segment gone from a text recognised again) has none: it is
    // shown where its times fall, not edited.
    const whole = new Map();  // each segment's whole text, to edit, however many pieces show it
    for (const segment of segments) {
      if (segment.index === undefined || segment.detached) continue;
      whole.set(segment.index, [whole.get(segment.index), segment.text].filter(Boolean).join(" ").replace(/\s+/g, " ").trim());
    }
    replace(transcript, segments.map((segment, index) => {
      const text = (segment.text || "").trim();
      const at = segment.detached || segment.index === undefined ? null : segment.index;
      const item = el("li", {
          class: "segment" + (segment.corrected ? " corrected" : "") + (segment.detached ? " detached" : ""),
          "data-start": String(segment.start), "data-speaker": segment.speaker || null,
          "data-index": at === null ? null : String(at),
          "data-colour": segment.speaker ? speakerColour(segment.speaker) : null,
          title: segment.detached ? t("correction_detached") : segment.corrected ? t("corrected_by_you") : null },
        el("button", { type: "button", class: "time", title: t("seek_to", { time: clock(segment.start) }),
                       onclick: () => { audio.currentTime = segment.start; audio.play().catch(() => {}); } },
           clock(segment.start)),
        segment.speaker && (index === 0 || segments[index - 1].speaker !== segment.speaker)
          ? speakerChip(segment.speaker, names) : null,
        el("span", { class: "text" }, text));
      if (at !== null) item.querySelector(".text").addEventListener("click", () => correctSegment(item, at, whole.get(at)));
      return item;
    }));
    showSpeakerForm();
  }

  audio.addEventListener("timeupdate", () => {
    for (const item of transcript.children) {
      const start = Number(item.dataset.start);
      const next = item.nextElementSibling ? Number(item.nextElementSibling.dataset.start) : Infinity;
      item.classList.toggle("playing", audio.currentTime >= start && audio.currentTime < next);
    }
  });

  every(POLL_MS, async () => {
    if (gone) return;
    const answer = await api("GET", `/records/${id}`);
    if (answer.status === 404) {
      replace(root, el("p", { class: "error", id: "not-found" }, t("not_found")), el("a", { href: "/" }, t("back")));
      gone = true;
      return;
    }
    if (!answer.ok) return;
    const speakers = answer.data.speakers || {};
    // a match that changed (found, renamed, rejected) redraws the form; fields being typed in do not
    if (nameSpeakers(answer.data) && loaded && !speakerFields.contains(document.activeElement)) showSpeakerForm();
    // the text first, then again once speakers are found (the diarize step finishes after done)
    if (answer.data.stage === "done" && (!loaded || speakers.state !== speakersState)) await showTranscript(answer.data);
    speakersState = speakers.state;
    show(answer.data);
  });
}

const root = document.getElementById("app");
if (root && PAGE.view === "records") recordsView(root);
if (root && PAGE.view === "record") recordView(root, PAGE.record);
