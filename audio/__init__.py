"""Audio: decoding any container to 16 kHz mono PCM, recognition engines, transcript formats.

No SQL and no broker here: the pipeline's steps feed these functions bytes and take results.
"""
