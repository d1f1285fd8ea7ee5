package httpapi

import (
	"google.golang.org/grpc/codes"

	"github.com/agentworkspace/files/contracts/errtable"
)

// HTTPStatus is the REST status of an error with code c and ErrorInfo
// reason: the one table's (contracts/errtable).
func HTTPStatus(c codes.Code, reason string) int { return errtable.RESTStatus(c, reason) }
