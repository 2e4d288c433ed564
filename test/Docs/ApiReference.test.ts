import * as fs from "node:fs"
import { describe, expect, it } from "vitest"
import { renderApiReference } from "../../src/Http/ApiReference.js"
import { API_REFERENCE_PATH, apiReference } from "../../scripts/api-reference.js"

describe("docs/api-reference.md", () => {
  it("is what `npm run docs:api` generates from the current OpenAPI document", () => {
    const onDisk = fs.existsSync(API_REFERENCE_PATH) ? fs.readFileSync(API_REFERENCE_PATH, "utf8") : ""
    const fresh = apiReference()
    if (onDisk !== fresh) {
      expect.fail(
        "docs/api-reference.md is stale: the OpenAPI document (src/Http/Api.ts and the groups it adds) changed. " +
          "Run `npm run docs:api` and commit docs/api-reference.md."
      )
    }
  })

  it("lists every operation with its parameters, request body, responses and error statuses", () => {
    const md = renderApiReference({
      info: { title: "t", version: "1" },
      tags: [{ name: "Things" }],
      paths: {
        "/api/things": {
          get: { tags: ["Things"], operationId: "things.list", security: [{ bearer: [] }], responses: { "200": { description: "Success" } } }
        },
        "/api/things/{thingId}": {
          patch: {
            tags: ["Things"],
            operationId: "things.update",
            summary: "Change a thing",
            security: [{ bearer: [] }],
            parameters: [{ name: "thingId", in: "path", required: true, schema: { type: "string" } }],
            requestBody: {
              content: {
                "application/json": {
                  schema: {
                    type: "object",
                    required: ["name"],
                    properties: {
                      name: { type: "string", maxLength: 200 },
                      rules: { type: "object", properties: { severity: { type: "array", items: { enum: ["HIGH", "LOW"] } } } }
                    }
                  }
                }
              }
            },
            responses: {
              "200": { description: "Success", content: { "application/json": { schema: { $ref: "#/components/schemas/Thing" } } } },
              "409": { description: "Conflict", content: { "application/json": { schema: { $ref: "#/components/schemas/Conflict" } } } }
            }
          }
        }
      },
      components: { schemas: { Thing: { type: "object", required: ["id"], properties: { id: { type: "string" } } } } }
    })
    expect(md).toContain("### PATCH /api/things/{thingId}")
    expect(md).toContain("| `thingId` | path | yes | string |  |")
    expect(md).toContain("| `name` | string | yes | max length 200 |")
    expect(md).toContain('| `rules.severity` | "HIGH" \\| "LOW"[] | no |  |')
    expect(md).toContain("**200** Success:\n\n[Thing](#thing)")
    expect(md).toContain("**Errors**: 409 Conflict")
    expect(md).toContain("### GET /api/things\n\nOperation `things.list`; needs `Authorization: Bearer <token>`.\n\n**200** Success (no body).")
    expect(md).toContain("### Thing\n\n| field | type | required | notes |\n|---|---|---|---|\n| `id` | string | yes |  |")
  })
})
