// The owner's page records: the microphone through MediaRecorder, streamed while it runs into a
// tus upload of deferred length (POST /uploads with Upload-Defer-Length), a piece every few
// seconds; Stop sends the length with the last piece and the service makes the record of it.
// A tab closed mid-recording loses only what was not sent yet: the service finishes an upload
// that stops growing into a record of what arrived (its card says it was cut short).
//
// The pieces go by a small PATCH loop of its own rather than tus-js-client: MediaRecorder hands
// over a growing recording in pieces of its choosing, and each is sent as soon as it comes.
"use strict";
const TUS_VERSION = "1.0.0";
const RECORD_SLICE_MS = 2000;
const RECORD_RETRY_MS = [1000, 2000, 4000, 8000, 15000];
const RECORD_TYPES = ["audio/webm;codecs=opus", "audio/ogg;codecs=opus", "audio/webm", "audio/ogg", "audio/mp4"];

function canRecord() {
  return Boolean(window.isSecureContext && navigator.mediaDevices && navigator.mediaDevices.getUserMedia
                 && window.MediaRecorder);
}

// The best container and codec this browser records in (the service decodes any of them).
function recordingType() {
  return RECORD_TYPES.find((type) => MediaRecorder.isTypeSupported(type)) || "";
}

function base64OfText(text) {
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

// tus's Upload-Metadata: `key base64(value)` pairs, empty values left out.
function uploadMetadata(fields) {
  return Object.entries(fields).filter(([, value]) => value).map(([key, value]) => key + " " + base64OfText(value)).join(",");
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Why the service refused a tus request, from its JSON error body when it sent one.
async function refusalOf(answer) {
  try {
    const data = await answer.json();
    if (data && data.message) return data.message;
  } catch (_) { /* not JSON */ }
  return "HTTP " + answer.status;
}

// One deferred-length tus upload fed piece by piece: `push` a piece, `finish` when no more come.
// One request at a time; a failed request (no answer, 5xx, 409, 423) is retried after a pause
// from the offset the service answers to HEAD, so nothing is sent twice and nothing acknowledged
// is sent again. `onChange(state)` is told of every step.
class StreamedUpload {
  constructor(metadata, onChange) {
    this.metadata = metadata;
    this.onChange = onChange;
    this.url = null;          // the upload's address, once created
    this.offset = 0;          // bytes the service acknowledged
    this.unsent = new Blob(); // the bytes after `offset`
    this.ended = false;       // no more pieces: the length is known
    this.lengthSent = false;  // the service knows the length
    this.record = null;       // the record made of it
    this.failure = null;      // why it cannot go on
    this.busy = false;
    this.failures = 0;
  }

  push(piece) {
    if (piece && piece.size) this.unsent = new Blob([this.unsent, piece]);
    this.pump();
  }

  finish() {
    this.ended = true;
    this.pump();
  }

  get done() {
    return this.record !== null || this.failure !== null;
  }

  headers(extra) {
    return { "Tus-Resumable": TUS_VERSION, "X-CSRF-Token": PAGE.csrf, ...extra };
  }

  // Send what is waiting, one request at a time, until nothing is (or it cannot go on).
  async pump() {
    if (this.busy || this.done) return;
    this.busy = true;
    try {
      while (!this.done) {
        let step;
        if (this.url === null) step = this.create();
        else if (this.unsent.size || (this.ended && !this.lengthSent)) step = this.send();
        else if (this.ended) step = this.ask();
        else break;
        if (await step) { this.failures = 0; continue; }
        if (this.done) break;
        // no answer, or one worth trying again: wait, then learn where the service stands
        const delay = RECORD_RETRY_MS[Math.min(this.failures, RECORD_RETRY_MS.length - 1)];
        this.failures += 1;
        this.onChange("retrying");
        await pause(delay);
        if (this.url !== null) await this.realign();
      }
    } finally {
      this.busy = false;
      this.onChange(this.failure ? "failed" : this.record !== null ? "accepted" : "sending");
    }
  }

  // Each step answers true when it went through, false to retry; a refusal sets `failure`.
  async request(url, init) {
    try {
      return await fetch(url, { credentials: "same-origin", ...init });
    } catch (_) {
      return null;  // no answer: the connection or the service is down
    }
  }

  async refused(answer) {
    if (answer === null || answer.status >= 500 || [409, 423].includes(answer.status)) return false;
    this.failure = answer.status === 401 ? t("record_signed_out")
      : [404, 410].includes(answer.status) ? t("record_closed") : await refusalOf(answer);
    return false;
  }

  async create() {
    const answer = await this.request("/uploads", { method: "POST", headers: this.headers({
      "Upload-Defer-Length": "1", "Upload-Metadata": uploadMetadata(this.metadata) }) });
    if (answer === null || answer.status !== 201) return this.refused(answer);
    this.url = new URL(answer.headers.get("Location"), window.location.href).pathname;
    this.onChange("created");
    return true;
  }

  async send() {
    const body = this.unsent;
    const last = this.ended;  // every piece has come: this PATCH ends the upload
    const extra = { "Upload-Offset": String(this.offset), "Content-Type": "application/offset+octet-stream" };
    if (last) extra["Upload-Length"] = String(this.offset + body.size);
    const answer = await this.request(this.url, { method: "PATCH", headers: this.headers(extra), body });
    if (answer !== null && answer.status === 413 && !last) {
      // the service may have closed the upload already (it made the record of what had arrived)
      await this.realign();
      if (this.record !== null) return true;
    }
    if (answer === null || answer.status !== 204) return this.refused(answer);
    this.acknowledged(Number(answer.headers.get("Upload-Offset")));
    if (last) this.lengthSent = true;
    this.named(answer);
    return true;
  }

  // The length is known and every byte acknowledged: wait for the record the service makes.
  async ask() {
    const answer = await this.request(this.url, { headers: { Accept: "application/json", "Tus-Resumable": TUS_VERSION } });
    if (answer === null || answer.status !== 200) return this.refused(answer);
    const data = await answer.json();
    if (data.record !== null && data.record !== undefined) this.record = data.record;
    else await pause(500);
    return true;
  }

  // HEAD: the service's offset (what it kept of a request that failed), whether it knows the
  // length, and the record when it made one.
  async realign() {
    const answer = await this.request(this.url, { method: "HEAD", headers: this.headers({}) });
    if (answer === null) return;
    if (answer.status !== 200) { await this.refused(answer); return; }
    this.acknowledged(Number(answer.headers.get("Upload-Offset")));
    if (answer.headers.get("Upload-Length") !== null) this.lengthSent = true;
    this.named(answer);
  }

  acknowledged(offset) {
    if (!Number.isFinite(offset) || offset < this.offset) return;
    this.unsent = this.unsent.slice(offset - this.offset);
    this.offset = offset;
    this.onChange("sent");
  }

  named(answer) {
    const record = answer.headers.get("Upload-Record");
    if (record) this.record = Number(record);
  }
}

// The Record button and the row of each recording in `list` (the page's list of uploads).
// `onRecord(id)` is told of each record made.
function recorderView(list, onRecord) {
  const button = el("button", { type: "button", id: "record", class: "record-button" }, t("record"));
  const hint = el("p", { class: "hint", id: "record-hint" }, t(canRecord() ? "record_hint" : "record_unavailable"));
  button.disabled = !canRecord();
  let current = null;  // the recording running now

  button.addEventListener("click", () => (current ? stop() : start()));

  async function start() {
    button.disabled = true;
    let stream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    } catch (error) {
      replace(hint, t("record_no_microphone", { reason: error.message || error.name }));
      hint.classList.add("error");
      button.disabled = false;
      return;
    }
    hint.classList.remove("error");
    replace(hint, t("record_hint"));
    const type = recordingType();
    const recorder = new MediaRecorder(stream, type ? { mimeType: type } : {});
    const began = new Date();
    const stamp = began.toISOString().slice(0, 19).replace("T", "-").replace(/:/g, "");
    const extension = (recorder.mimeType || type).includes("ogg") ? "ogg" : (recorder.mimeType || type).includes("mp4") ? "m4a" : "webm";
    const name = `recording-${stamp}.${extension}`;
    const bar = el("span", { class: "recording-dot", "aria-hidden": "true" });
    const status = el("span", { class: "status", role: "status" }, t("recording"));
    const row = el("li", { class: "upload recording", "data-name": name, "data-state": "recording" },
      el("span", { class: "name" }, name), bar, status);
    list.prepend(row);
    const upload = new StreamedUpload({ filename: name, title: t("recording_title", { when: began.toLocaleString(document.documentElement.lang) }) },
      (state) => show(state));
    unsent.add(upload);
    const recording = { recorder, stream, upload, row, began, ticker: null };
    current = recording;

    function show(state) {
      if (upload.url) row.dataset.upload = upload.url;
      row.dataset.sent = String(upload.offset);
      if (upload.failure !== null) {
        row.dataset.state = "refused";
        row.classList.add("refused");
        replace(status, t("refused", { reason: upload.failure }));
        if (current === recording) stop();
      } else if (upload.record !== null) {
        if (row.dataset.state === "accepted") return;
        // a record while still recording: the service heard nothing for its idle time (the
        // connection was down) and made the record of what had arrived; what follows would not
        // decode on its own, so the recording stops and says so
        const early = current === recording;
        if (early) stop();
        row.dataset.state = "accepted";
        row.dataset.record = String(upload.record);
        row.classList.add("accepted");
        replace(status, el("a", { href: "/view/" + upload.record, class: "record-link" }, t("accepted")),
                early ? [" · ", t("record_closed")] : null);
        onRecord(upload.record);
      } else if (current === recording) {
        replace(status, t(state === "retrying" ? "record_retrying" : "recording_for",
                          { time: clock((Date.now() - began) / 1000), sent: kilobytes(upload.offset) }));
      } else {
        row.dataset.state = "finishing";
        replace(status, t(state === "retrying" ? "record_retrying" : "record_finishing", { sent: kilobytes(upload.offset) }));
      }
    }

    recorder.addEventListener("dataavailable", (event) => upload.push(event.data));
    recorder.addEventListener("stop", () => {
      for (const track of stream.getTracks()) track.stop();
      upload.finish();
    });
    recorder.start(RECORD_SLICE_MS);
    recording.ticker = setInterval(() => show("sending"), 1000);
    upload.pump();
    replace(button, t("record_stop"));
    button.classList.add("recording");
    button.disabled = false;
  }

  function stop() {
    const recording = current;
    current = null;
    clearInterval(recording.ticker);
    if (recording.recorder.state !== "inactive") recording.recorder.stop();
    replace(button, t("record"));
    button.classList.remove("recording");
    button.disabled = !canRecord();
  }

  // leaving the page while recording, or before all of a recording is sent, would cut it short:
  // the browser asks first
  const unsent = new Set();
  window.addEventListener("beforeunload", (event) => {
    if (current || [...unsent].some((upload) => !upload.done)) event.preventDefault();
  });

  return el("div", { class: "recorder" }, button, hint);
}

function kilobytes(bytes) {
  return Math.round(bytes / 1024) + " KB";
}
