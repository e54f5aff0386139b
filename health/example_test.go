package health_test

import (
	"context"
	"fmt"

	"github.com/leasehold/leasehold/health"
)

func Example() {
	ctx := context.Background()
	fmt.Println(health.Shell("exit 0")(ctx))
	fmt.Println(health.Shell("echo sick; exit 3")(ctx))
	// Output:
	// <nil>
	// health: sh -c "echo sick; exit 3": exit status 3; last output: "sick"
}
