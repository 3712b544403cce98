package server

import "context"

// leaderTerms runs each leadership term's controller only once the last
// term's has returned. client-go's elector cancels a lost term's context but
// does not wait for OnStartedLeading to return, so a replica that wins the
// Lease back at once would otherwise start a second controller beside the
// first one still stopping: two controllers acting, and a second set of
// metrics registered before the first is gone.
type leaderTerms chan struct{}

func newLeaderTerms() leaderTerms {
	t := make(leaderTerms, 1)
	t <- struct{}{}
	return t
}

// run runs one term: it waits for the last term to end, or for ctx to end
// first, in which case the term never starts.
func (t leaderTerms) run(ctx context.Context, term func(context.Context)) {
	select {
	case <-t:
	case <-ctx.Done():
		return
	}
	defer func() { t <- struct{}{} }()
	if ctx.Err() != nil {
		return
	}
	term(ctx)
}
