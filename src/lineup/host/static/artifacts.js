// LineUp shell: the files capability calls kept (artifacts), as timeline rows.
//
// Every file saved or picked through a capability, for the agent or for an app, is a
// row of its own that the Runtime writes with the file (kind "artifact"); a file an
// app kept belongs to its instance's sub-session and comes inside that group. So a
// reload, a second tab or a restart shows the same one row, with the file's name,
// type and size, and a download: GET /artifacts/{id}, which answers only this
// browser's session, always as an attachment with a safe file name. The name comes
// from the requester: shown with textContent, never as HTML.

import { el } from "./dom.js";
import { bytes, number, t } from "./i18n.js";

export function renderArtifactRow(item, li) {
  const file = item.data;
  li.dataset.artifactId = file.artifact_id;
  const chip = el("div", "artifact-chip");
  chip.append(el("span", "artifact-icon"));
  const text = el("span", "artifact-text");
  const meta = el("span", "artifact-meta", `${file.media_type} · ${bytes(file.size)}`);
  meta.title = number(file.size, { style: "unit", unit: "byte", unitDisplay: "long" });
  text.append(el("span", "artifact-name", file.name), meta);
  const link = el("a", "artifact-download", t("artifacts.download"));
  link.href = file.url || `/artifacts/${encodeURIComponent(file.artifact_id)}`;
  link.download = file.name;
  link.setAttribute("aria-label", t("artifacts.download_label", { name: file.name }));
  chip.append(text, link);
  li.append(chip);
}
