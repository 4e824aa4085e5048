"""The API's one error shape, `{"error": code, "message": text, ...}`, the HTTP status of each
refusal of the service, and the handlers that give every refusal that shape. Routers raise
`ApiError` (`refusal` makes one of an error of the service's); whatever else escapes a route (a
framework 404, a body that fails validation, an unexpected exception) is answered here too, so
no stack trace reaches a client and no request body reaches the log."""

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from loguru import logger
from starlette.exceptions import HTTPException as StarletteHTTPException

from domain.corrections import NoSuchSegment, NoSuchWord, NotDone, NotTranslated
from domain.errors import TranscriberError
from domain.resume import NotHalted
from domain.search import QueryProblem
from domain.voices import BadMerge, NoSuchVoice, VoiceNameTaken
from service.intake import (
    AudioTooLong,
    BadLanguage,
    BadPrompt,
    BadTask,
    EmptyFile,
    IntakeError,
    KeyReused,
    NotAudio,
    OverQuota,
    TooLarge,
    UnsupportedAudio,
)
from service.resumable import ChecksumMismatch
from service.search import MeaningUnavailable

NOT_FOUND = ("not_found", "no such record")

# The HTTP status that answers each refusal of the service's: the lower layers name what went
# wrong (`code`), this table alone says what HTTP makes of it. A class not named here takes its
# nearest named ancestor's status (any other intake refusal: 400).
STATUS = {
    IntakeError: 400,
    EmptyFile: 415,
    NotAudio: 415,
    UnsupportedAudio: 415,
    TooLarge: 413,
    AudioTooLong: 413,
    OverQuota: 413,
    KeyReused: 422,
    BadLanguage: 422,
    BadPrompt: 422,
    BadTask: 422,
    QueryProblem: 422,
    MeaningUnavailable: 409,
    NotHalted: 409,
    NotDone: 409,
    NotTranslated: 409,
    NoSuchSegment: 422,
    NoSuchWord: 422,
    NoSuchVoice: 404,
    VoiceNameTaken: 409,
    BadMerge: 422,
    ChecksumMismatch: 460,  # tus's checksum extension: Checksum Mismatch
}


def http_status(error: TranscriberError) -> int:
    """The status `STATUS` gives `error`'s class (500 for an error no refusal is meant to be)."""
    return next((STATUS[kind] for kind in type(error).__mro__ if kind in STATUS), 500)


class ApiError(TranscriberError):
    """A refusal with its status, code and message; `extra` fields join the JSON body."""

    def __init__(self, status: int, code: str, message: str, **extra):
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra


def refusal(error: TranscriberError, *, status: int | None = None, **extra) -> ApiError:
    """The answer to a refusal of the service's: its status (`http_status`, unless `status` is
    given), code and message, with the fields the error carries (`details`) and `extra`."""
    return ApiError(status or http_status(error), error.code, str(error), **getattr(error, "details", {}), **extra)


def error_response(status: int, code: str, message: str, **extra) -> JSONResponse:
    """The JSON body of a refusal; a 401 names the scheme it wants, as HTTP asks."""
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse({"error": code, "message": message, **extra}, status_code=status, headers=headers)


def add_handlers(app: FastAPI) -> None:
    """Answer every error raised inside `app` in the shape above."""

    @app.exception_handler(ApiError)
    async def api_error(request: Request, error: ApiError):
        return error_response(error.status, error.code, error.message, **error.extra)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException):
        code = {404: "not_found", 405: "method_not_allowed", 413: TooLarge.code}.get(error.status_code, "http_error")
        return error_response(error.status_code, code, str(error.detail))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError):
        problems = [{"field": ".".join(map(str, e["loc"][1:])), "problem": e["msg"]} for e in error.errors()]
        return error_response(422, "invalid_request", "the request is not valid", problems=problems)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception):
        logger.opt(exception=False).error(
            "request {} {} failed: {}", request.method, request.url.path, type(error).__name__
        )
        return error_response(500, "internal", "internal error")
