// Package contracts holds the protobuf contracts of Agent Workspace Files and
// exposes the generated OpenAPI document for the gateway to serve. Everything
// under gen/ is produced by generate.sh (make generate) and never edited.
package contracts

import _ "embed"

// OpenAPI is the OpenAPI 3 document of the gateway's REST API
// (WorkspaceManagementService), converted from the protoc-gen-openapiv2 output.
//
//go:embed gen/openapi/workspace.openapi.json
var OpenAPI []byte
