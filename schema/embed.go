// Package schema embeds the JSON Schemas that define kalab's file formats, so the binary
// validates scenarios and results without reading anything from disk.
package schema

import _ "embed"

// Scenario is scenario.schema.json (JSON Schema 2020-12): the contract for scenario files.
//
//go:embed scenario.schema.json
var Scenario []byte

// ScenarioURL is the $id under which Scenario is registered with a schema compiler.
const ScenarioURL = "https://kalab.dev/schema/scenario.schema.json"

// Result is result.schema.json: the contract for results.jsonl lines ($defs/run and
// $defs/scenario) and request lines ($defs/request).
//
//go:embed result.schema.json
var Result []byte

// ResultURL is the $id under which Result is registered with a schema compiler.
const ResultURL = "https://kalab.dev/schema/result.schema.json"

// Shard is shard.schema.json: the contract for the shard.json manifest of kalab run --shard.
//
//go:embed shard.schema.json
var Shard []byte

// ShardURL is the $id under which Shard is registered with a schema compiler.
const ShardURL = "https://kalab.dev/schema/shard.schema.json"
