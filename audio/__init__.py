"""Audio: decoding any container to 16 kHz mono PCM, recognising it, writing transcript formats.

No SQL, no broker and no configuration module here: the pipeline's steps feed these functions
bytes and settings and take results. Where each thing lives:

- decode (PCM from any container), sniff (an upload's media type), windows (where PCM is cut),
  formats (txt, srt, vtt, json);
- recognized (what every engine returns), engines (which engine a configuration means, one
  recognizer per process), models (which weights a name means, hash-checked);
- whisper, pocketsphinx, remote (the engines), guards (checks and mends for the text an engine
  writes), isolation and recognizer_process (a local engine in a child process, on a deadline).
"""
