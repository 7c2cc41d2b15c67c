package v1

// The JSON Schema (draft 2020-12) of report.json, apis/v1/report.v1.json, lets
// tools validate reports without the Go types. The tests check that reports
// produced by the real analysis (harness/verdict) and by the Go types
// validate against it.

import _ "embed"

// ReportSchemaV1 is the JSON Schema of report.json with schemaVersion
// "zerodrop.dev/report/v1".
//
//go:embed report.v1.json
var ReportSchemaV1 []byte

// ReportSchemaV1ID is the schema's $id.
const ReportSchemaV1ID = "https://zerodrop.dev/schema/report.v1.json"
