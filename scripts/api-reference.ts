// `npm run docs:api`: writes docs/api-reference.md from the service's OpenAPI document.
import { OpenApi } from "@effect/platform"
import * as fs from "node:fs"
import { Api } from "../src/Http/Api.js"
import { renderApiReference } from "../src/Http/ApiReference.js"

export const API_REFERENCE_PATH = new URL("../docs/api-reference.md", import.meta.url)

export const apiReference = () => renderApiReference(OpenApi.fromApi(Api))

if (import.meta.url === `file://${process.argv[1]}`) {
  fs.writeFileSync(API_REFERENCE_PATH, apiReference())
  console.log("wrote docs/api-reference.md")
}
