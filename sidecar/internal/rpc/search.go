package rpc

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agentworkspace/files/contracts/errtable"
	workspacev1 "github.com/agentworkspace/files/contracts/gen/go/workspace/v1"
	"github.com/agentworkspace/files/davfs"
	"github.com/agentworkspace/files/davfs/search"
)

// WithSearch serves Search over fs (davfs/search: the confined walk of
// the core's exported API); without it Search is Unimplemented.
func (s *Service) WithSearch(fs *davfs.FS) *Service {
	s.search = fs
	s.searchSlots = make(chan struct{}, MaxSearches)
	return s
}

// MaxSearches is how many searches one sidecar runs at once: each holds
// up to GOMAXPROCS file buffers of max_file_bytes (docs/limits.md). One
// more is ResourceExhausted/TOO_MANY_STREAMS (429).
const MaxSearches = 4

// Search streams the matches of a name or content search, then its
// summary. A bad request (query, glob, path) is an error before the first
// message; a bound ends the stream with a truncated summary; the client
// going away cancels the walk (the stream's context).
func (s *Service) Search(req *workspacev1.SearchRequest, stream workspacev1.WorkspaceService_SearchServer) error {
	if s.search == nil {
		return status.Error(codes.Unimplemented, "search is not available")
	}
	select {
	case s.searchSlots <- struct{}{}:
		defer func() { <-s.searchSlots }()
	default:
		return errtable.Status(codes.ResourceExhausted, workspacev1.ErrorReason_TOO_MANY_STREAMS.String(),
			"too many searches are running in this workspace service; retry later").Err()
	}
	ws, err := workspace(req.GetWorkspace())
	if err != nil {
		return streamErr(err)
	}
	do, err := search.Search(stream.Context(), s.search, ws, req.GetPath(), searchOptions(req))
	if err != nil {
		return streamErr(err)
	}
	sum, err := do(func(r search.Result) error {
		return stream.Send(&workspacev1.SearchResult{Kind: &workspacev1.SearchResult_Match{Match: &workspacev1.SearchMatch{
			Path: r.Path, Line: int32(r.Line), Preview: r.Preview,
			MatchStart: int32(r.MatchStart), MatchEnd: int32(r.MatchEnd), Score: int32(r.Score),
		}}})
	})
	if err != nil {
		return searchErr(err)
	}
	return stream.Send(&workspacev1.SearchResult{Kind: &workspacev1.SearchResult_Summary{Summary: &workspacev1.SearchSummary{
		FilesSearched: int32(sum.FilesSearched), Results: int32(sum.Results), BytesRead: sum.BytesRead,
		Truncated: sum.Truncated, BinarySkipped: int32(sum.BinarySkipped), FileTruncated: int32(sum.FileTruncated),
	}}})
}

func searchOptions(req *workspacev1.SearchRequest) search.Options {
	mode := search.ModeContent
	if req.GetMode() == workspacev1.SearchMode_SEARCH_MODE_NAME {
		mode = search.ModeName
	}
	return search.Options{
		Mode: mode, Query: req.GetQuery(), Regex: req.GetRegex(), CaseSensitive: req.GetCaseSensitive(),
		Include: req.GetInclude(), Exclude: req.GetExclude(),
		MaxResults: int(req.GetMaxResults()), MaxBytes: req.GetMaxBytes(), MaxFileBytes: req.GetMaxFileBytes(),
		Timeout: time.Duration(req.GetTimeoutMs()) * time.Millisecond,
	}
}

// searchErr is streamErr with the search's own word for a client gone.
func searchErr(err error) error {
	if errors.Is(err, context.Canceled) {
		return status.Error(codes.Canceled, "search canceled")
	}
	return streamErr(err)
}
