package provider

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// statusInText finds an HTTP status in the error strings langchaingo's
// clients make: "API returned unexpected status code: 429: ..." (openai,
// anthropic), "(HTTP Error 429) ..." (mistral-go), "429 Too Many Requests:
// ..." (ollama).
var statusInText = regexp.MustCompile(`(?i)(?:status code:?\s*|HTTP Error\s*|^)([1-5]\d\d)\b`)

// contextLengthWords are how providers say a request is too long for the
// model's context window.
var contextLengthWords = []string{
	"context_length_exceeded",
	"maximum context length",
	"context length",
	"context window",
	"prompt is too long",
	"too many tokens",
	"input is too long",
	"exceeds the maximum number of tokens",
	"token limit",
	"context limit", // anthropic: "input length and `max_tokens` exceed context limit"
}

// badKeyWords are how Google says, with a 400, that the API key is wrong.
var badKeyWords = []string{"api_key_invalid", "api key not valid", "api key expired"}

// noCredentialsWords say that the AWS SDK could not sign a request: its
// credential chain (environment, profiles, SSO, container, instance
// metadata) gave nothing.
var noCredentialsWords = []string{"get credentials:", "failed to retrieve credentials", "failed to refresh cached credentials"}

// classify turns the error of one adapter call into an *Error. ctx is the
// call's context, st what the transport recorded (nil when the model does
// not go through one), streamErr the error the caller's Stream returned,
// if any.
func classify(ctx context.Context, provider string, err error, st *callState, streamErr error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	e := &Error{Kind: ErrOther, Provider: provider, Err: err}
	if streamErr != nil && errors.Is(err, streamErr) {
		e.Kind = ErrCancelled
		return e
	}
	// The caller's context first: langchaingo replaces context errors by
	// strings such as "request timeout: API call exceeded deadline".
	switch cerr := ctx.Err(); {
	case errors.Is(cerr, context.Canceled):
		e.Kind = ErrCancelled
		return e
	case errors.Is(cerr, context.DeadlineExceeded):
		e.Kind = ErrTimeout
		return e
	}
	status, retry, failed := st.result()
	if status < 400 {
		// The transport saw no failing response (or there is none): look
		// in the error itself.
		status = statusOf(err)
	}
	text := strings.ToLower(err.Error())
	e.Status = status
	switch {
	case status == http.StatusTooManyRequests && provider == "openai" && strings.Contains(text, "exceeded your current quota"):
		// insufficient_quota: no credit left, which no wait cures.
		e.Kind = ErrAuth
	case status == http.StatusTooManyRequests:
		e.Kind, e.Retry = ErrRateLimit, retry
		if retry == 0 {
			e.Retry = retryFromText(err.Error())
		}
	case status == http.StatusUnauthorized, status == http.StatusForbidden,
		status == http.StatusBadRequest && hasAny(text, badKeyWords):
		e.Kind = ErrAuth
	case status == http.StatusRequestTimeout:
		e.Kind = ErrTimeout
	case status >= 400 && status < 500:
		e.Kind = ErrBadRequest
		if hasAny(text, contextLengthWords) {
			e.Kind = ErrContextLength
		}
	case status >= 500:
		e.Kind, e.Retry = ErrServer, retry
	case errors.Is(err, context.Canceled):
		e.Kind = ErrCancelled
	case errors.Is(err, context.DeadlineExceeded), isNetTimeout(err), isNetTimeout(failed),
		strings.Contains(text, "timeout"), strings.Contains(text, "deadline exceeded"):
		e.Kind = ErrTimeout
		if failed != nil {
			e.Err = failed
		}
	case status == 0 && hasAny(text, noCredentialsWords):
		// The AWS SDK found no credentials before sending anything.
		e.Kind, e.Err = ErrAuth, fmt.Errorf("no AWS credentials found: %w", err)
	case failed != nil:
		e.Kind, e.Err = ErrNetwork, unreachable(failed)
	case st.cutShort() != nil:
		// The response began but its body was cut short: the network's
		// failure, whatever the client made of the rest.
		cut := st.cutShort()
		e.Kind = ErrNetwork
		if !strings.Contains(err.Error(), cut.Error()) {
			e.Err = fmt.Errorf("%w (the response was cut short: %w)", err, cut)
		}
		if isNetTimeout(cut) {
			e.Kind = ErrTimeout
		}
	case hasAny(text, contextLengthWords):
		e.Kind = ErrContextLength
	case strings.Contains(text, "rate limit"), strings.Contains(text, "too many requests"),
		strings.Contains(text, "rate_limit_error"):
		e.Kind, e.Retry = ErrRateLimit, retryFromText(err.Error())
	case hasAny(text, []string{"overloaded_error", "api_error", "server_error"}):
		// An error event inside a stream that began with a 200.
		e.Kind = ErrServer
	}
	return e
}

// statusOf finds the HTTP status of err: from a typed error of the Google
// or AWS clients, else from its text.
func statusOf(err error) int {
	var aws interface{ HTTPStatusCode() int }
	if errors.As(err, &aws) {
		return aws.HTTPStatusCode()
	}
	var gax interface{ HTTPCode() int }
	if errors.As(err, &gax) && gax.HTTPCode() > 0 {
		return gax.HTTPCode()
	}
	if m := statusInText.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

func isNetTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// unreachable adds what to check to a request's failure, where the cause
// says: nothing listens at the address, or the host does not exist.
func unreachable(err error) error {
	var dns *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("%w (nothing is listening there: start the server, or fix the base URL)", err)
	case errors.As(err, &dns) && dns.IsNotFound:
		return fmt.Errorf("%w (no such host: fix the base URL)", err)
	}
	return err
}

func hasAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// retryInText finds a "retry after N seconds" hint in an error message,
// for clients that drop the headers and have no transport of ours.
var retryInText = regexp.MustCompile(`(?i)(?:retry|try again)[^0-9]{0,20}([0-9]+(?:\.[0-9]+)?)\s*(ms|s|sec|seconds?)\b`)

// retryFromText is the wait a "try again in 1.5s" hint in s asks for, or 0.
func retryFromText(s string) time.Duration {
	m := retryInText.FindStringSubmatch(s)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil || !(v >= 0 && v <= 1e6) {
		return 0
	}
	if strings.EqualFold(m[2], "ms") {
		return time.Duration(v * float64(time.Millisecond))
	}
	return time.Duration(v * float64(time.Second))
}
