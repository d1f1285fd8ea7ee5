package httpapi

import (
	"net/http"
	"strings"
)

// checkpointRoute names the checkpoint mutation of a path split after
// /agents/ (seg[1] == "checkpoints"), or "" for reads.
func checkpointRoute(method string, seg []string) string {
	switch {
	case len(seg) == 2 && method == http.MethodPost:
		return "create_checkpoint"
	case len(seg) == 3 && method == http.MethodPost && strings.HasSuffix(seg[2], ":restore"):
		return "restore_checkpoint"
	case len(seg) == 3 && method == http.MethodDelete:
		return "delete_checkpoint"
	}
	return ""
}
