"""The owner's voices over HTTP (docs/api.md): the list, a rename, a deletion and a merge.

A voice is the owner's alone: another owner's voice is answered exactly like a missing one
(404). The rules are the store's (`db.voices`), the same the command line uses.
"""

from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, Depends, Response

from db import Store
from domain.voices import NoSuchVoice, VoiceRefusal, voice_view
from service import inputs
from web.errors import refusal


def router(store: Store, owner: Callable[..., dict]) -> APIRouter:
    routes = APIRouter(tags=["voices"])
    Owner = Annotated[dict, Depends(owner)]

    def voice_id(raw: str) -> int:
        found = inputs.record_id(raw)  # an id is an id: ASCII digits, a bigint
        if found is None:
            raise refusal(NoSuchVoice("no such voice"))
        return found

    @routes.get("/voices")
    def list_voices(who: Owner):
        """The caller's voices, by name: each named speaker of a record is a sample of the voice of
        its name; a later recording's speaker that sounds like one is shown with its name."""
        return {"items": [voice_view(row) for row in store.voices(who["id"])]}

    @routes.patch("/voices/{raw_id}")
    def rename(raw_id: str, change: inputs.VoiceEdit, who: Owner):
        """Rename the voice: every record's speaker named or matched with it is shown with the new
        name. 409 `voice_name_taken` when another of the caller's voices has it."""
        try:
            store.rename_voice(who["id"], voice_id(raw_id), change.name)
        except VoiceRefusal as error:
            raise refusal(error) from None
        return _one(store, who["id"], voice_id(raw_id))

    @routes.delete("/voices/{raw_id}", status_code=204)
    def delete(raw_id: str, who: Owner):
        """Forget the voice: its samples and matches go; records keep their own names."""
        try:
            store.delete_voice(who["id"], voice_id(raw_id))
        except VoiceRefusal as error:
            raise refusal(error) from None
        return Response(status_code=204)

    @routes.post("/voices/{raw_id}/merge")
    def merge(raw_id: str, merge: inputs.VoiceMerge, who: Owner):
        """Merge the voice into `into`, another of the caller's: its samples, matches and
        rejections become that voice's, and it goes. 422 `bad_merge` into itself or into no voice
        of the caller's; nothing is changed then."""
        try:
            store.merge_voice(who["id"], voice_id(raw_id), merge.into)
        except VoiceRefusal as error:
            raise refusal(error) from None
        return _one(store, who["id"], merge.into)

    return routes


def _one(store: Store, owner_id: int, wanted: int) -> dict:
    return next(voice_view(row) for row in store.voices(owner_id) if row["id"] == wanted)
