package dynamodb

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"
)

// Writes are never sent again after an attempt that may have reached the table (T7 of
// docs/design.md).
//
// The SDK's standard retryer sends a request again after a 5xx answer, a throttling error, a
// timeout or a broken connection. For a conditional write, resending is wrong whenever the
// first attempt may have been applied: a 500 InternalServerError, a connection reset or a
// timeout after the request was written say nothing of whether the table took the write. Sent
// again, a write that had been applied finds its own version in place of the one it is
// conditioned on, fails its condition, and the store would answer a lost race (Create:
// ErrExists; Patch: a conflict, then a read that finds the condition's field changed by the
// write itself, ErrConditionFailed) for a write that won: the caller would give up a lease it
// holds, or a follower would think it lost a takeover it made.
//
// So writes use a retryer of their own that retries only the errors by which DynamoDB refuses
// a request before running it: throttling (ProvisionedThroughputExceededException,
// ThrottlingException, RequestLimitExceeded), whose writes were not applied. Every other
// failure is returned at once, an unknown outcome (an error holding no sentinel); the engine
// reads at its next attempt and finds out (E10). Reads keep the SDK's standard retries:
// reading again is harmless.
//
// Below the retryer, Go's HTTP transport sends a request again on a new connection only when
// it wrote nothing of it on the old one (a POST is not replayable otherwise), which cannot
// apply a write twice.
//
// And should a write be sent again all the same (a retry policy set elsewhere, a proxy that
// resends), the store still tells its own write from another's: each Put sets a version
// drawn at random for that attempt (128 bits), so an item found holding it, returned with a
// failed condition (ReturnValuesOnConditionCheckFailure) or read after one, is this call's own
// write, and the call succeeded (write and Create in dynamodb.go). A conditional Delete leaves
// nothing to recognise, which is why the retryer above matters for it.

// writeMaxAttempts bounds the attempts of a throttled write.
const writeMaxAttempts = 3

// newWriteRetryer returns the retryer of writes: throttling errors only.
func newWriteRetryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = writeMaxAttempts
		o.Retryables = []retry.IsErrorRetryable{retry.NoRetryCanceledError{}, retry.IsErrorRetryableFunc(throttled)}
	})
}

// writeOptions returns the options of a write call: its retryer replaces the client's.
// RetryMaxAttempts is cleared so that the client's (AWS_MAX_ATTEMPTS) does not wrap it.
func writeOptions(r aws.Retryer) func(*ddb.Options) {
	return func(o *ddb.Options) {
		o.Retryer = r
		o.RetryMaxAttempts = 0
	}
}

// throttled reports as retryable the errors by which DynamoDB refuses a request unrun.
func throttled(err error) aws.Ternary {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded":
			return aws.TrueTernary
		}
	}
	return aws.FalseTernary
}
