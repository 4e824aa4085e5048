// Speakers on a record's page: a colour and a label per speaker, and why a record
// shows none. Used by owner.js's record view.
"use strict";

// As many colours as the style sheet's .speaker[data-colour] rules (a palette told apart also by
// colour-blind readers); a label's colour follows its number, so it is the same on every visit.
// Beyond the palette colours repeat, and the label text beside each one still tells who speaks.
const SPEAKER_COLOURS = 8;

function speakerColour(label) {
  return String((Number(label.slice(1)) - 1) % SPEAKER_COLOURS);
}

// What a reader sees for a speaker: the owner's name for it, else "Speaker N".
function speakerName(label, names) {
  return (names && names[label]) || t("speaker_n", { n: label.slice(1) });
}

function speakerChip(label, names) {
  return el("span", { class: "speaker", "data-speaker": label, "data-colour": speakerColour(label) },
            speakerName(label, names));
}

// Why a done record shows no speakers (or that they are still being found); null once shown.
function speakersNoteOf(card, labelled) {
  const speakers = card.speakers;
  if (card.stage !== "done" || !speakers) return null;
  if (speakers.state === "pending") return t("speakers_pending");
  if (speakers.state === "halted") return t("speakers_halted", { reason: reasonText(speakers.reason) });
  if (speakers.state === "off") return t(speakers.reason === "not_asked" ? "speakers_not_asked" : "speakers_off");
  return labelled ? null : t("speakers_one_voice");
}
