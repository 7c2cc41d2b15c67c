// Package schema holds the JSON Schema (draft 2020-12) of report.json,
// reports/schema/report.v1.json, so that tools can validate reports without
// the Go types. The tests check that reports produced by the real analysis
// (harness/verdict) and by the Go types validate against it.
package schema

import _ "embed"

// ReportV1 is the JSON Schema of report.json with schemaVersion
// "zerodrop.dev/report/v1".
//
//go:embed report.v1.json
var ReportV1 []byte

// ReportV1ID is the schema's $id.
const ReportV1ID = "https://zerodrop.dev/schema/report.v1.json"
