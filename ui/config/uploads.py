"""What files and requests may take: uploads, previews, messages, request bodies and the disk."""
from __future__ import annotations

from ui.config.base import SettingsPart, setting

UPLOADS_PER_HOUR = 20  # the default hourly upload budget, in uploads of the largest size


class UploadSettings(SettingsPart):
    max_upload_mb: float = setting(50, "size limit of one uploaded file, in MB", ge=0.001, le=1_000_000)
    max_files_per_message: int = setting(10, "files one message may carry", ge=1, le=1000)
    max_workspace_mb: float | None = setting(None, "what one chat's files may take in its workspace, in MB (an "
                                                   "upload counts as stored: a text re-encoded as UTF-8 may be up "
                                                   "to 3 times its upload)",
                                             ge=1, le=10_000_000, default_text="4 uploads of the largest size")
    upload_mb_per_hour: int | None = setting(
        None, "what one visitor may store through the upload route an hour, in MB (0: no limit)", ge=0,
        le=100_000_000, default_text="20 uploads of the largest size")
    visitor_disk_mb: int = setting(4096, "what one visitor's chats may take on disk before their runs are refused, "
                                         "in MB (0: no limit)", ge=0, le=100_000_000)
    min_free_mb: int = setting(2048, "disk space kept free where the data folder lives, in MB: below it no run "
                                     "starts and running code stops writing", ge=0, le=100_000_000)
    max_published_mb: float = setting(2048, "what one chat's shown files (a copy per version, in Gradio's folder) "
                                            "may take, in MB", ge=1, le=100_000_000)
    max_message_chars: int = setting(100_000, "characters one chat message may have (0: no limit)", ge=0,
                                     le=100_000_000)
    max_request_mb: int = setting(2, "MB one request body may have, uploads aside (never less than a message of "
                                     "the longest allowed length needs)", ge=1, le=100_000)
    preview_memory_mb: int = setting(768, "memory limit of the child process that parses an upload's preview, in "
                                          "MB", ge=64, le=1_000_000)
    preview_timeout_s: float = setting(15.0, "time limit of that child process, in seconds", ge=1, le=3600)
