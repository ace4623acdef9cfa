/** The part of `crisp help upscale` / `crisp help batch` that scripts rely on: the JSON shape and exit codes. */
export const JOBS_HELP = `
Output:
  One line per image on stdout ("<input> → <output> (W×H, size)"); progress, notices and errors on stderr.
  Outputs are named from --template: {name}_{model}_x{scale}.{ext}, where {model} also carries what
  changes the pixels (custom:x → custom-x, -dn0.5 for --denoise, -face for --face).

--json prints one document on stdout, the same keys for local and --remote runs:
  { "model": "<the model used>",
    "results": [ { "input", "status": "done|failed|skipped|cancelled", "output", "width", "height",
                   "fileSize", "creditsDeducted", "warnings": [], "faces": null | { "found", "enhanced" },
                   "device": null | { "provider", "precision", "reason" }, "error": null | { "code", "message" } } ],
    "upscaled", "failed", "skipped", "cancelled", "creditsDeducted",
    "error": null | { "code", "message" } }
  error.code is stable (e.g. not-found, permission-denied, not-a-folder, read-only, disk-full,
  unknown-model, connection-refused, insufficient-credits, usage).

Exit codes:
  0  every image was upscaled (or skipped by --overwrite skip)
  1  an option, the output folder or at least one image failed (the others are still written)
  130  interrupted (Ctrl-C); nothing half-written is left

Set NO_COLOR=1 for no colour; --verbose or CRISP_DEBUG=1 shows the technical details of an error.
`;
