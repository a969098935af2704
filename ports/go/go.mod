module epochal/ports/go

go 1.26.0

require (
	github.com/go-zookeeper/zk v1.0.4
	github.com/twmb/franz-go/pkg/kmsg v1.15.1
)
