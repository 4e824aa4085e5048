"""The shell: the `transcriber` command line and the process wiring of `transcribe`, `serve` and
`up`. It may use every layer below; nothing below imports it."""
