"""The rules of the pipeline: stages, claims, policies, halts and resume.

Nothing here performs I/O or knows SQL, the broker or HTTP; the other layers call these rules.
"""
