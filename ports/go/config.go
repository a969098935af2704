package main

// The command line (docs/ports.md): {id} {port} {zookeeper} {data_dir} --config
// {config_json}; the config file holds every setting of impl.node.config.BrokerConfig.

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"
)

type Config struct {
	BrokerID               int     `json:"broker_id"`
	Port                   int     `json:"port"`
	Zookeeper              string  `json:"zookeeper"`
	DataDir                string  `json:"data_dir"`
	RunID                  string  `json:"run_id"`
	Host                   string  `json:"host"`
	Truncation             string  `json:"truncation"`
	MinInsyncReplicas      int     `json:"min_insync_replicas"`
	ReplicaLagTimeMs       int     `json:"replica_lag_time_ms"`
	ReplicaLagMaxMessages  int64   `json:"replica_lag_max_messages"`
	UncleanLeaderElection  bool    `json:"unclean_leader_election"`
	ZkSessionTimeoutS      float64 `json:"zk_session_timeout_s"`
	FetchMaxWaitMs         int     `json:"fetch_max_wait_ms"`
	ControllerRequestTOs   float64 `json:"controller_request_timeout_s"`
	AdvertisedPort         int     `json:"advertised_port"`
	MaxFrame               int     `json:"max_frame"`
	MaxMessageBytes        int     `json:"max_message_bytes"`
	FetchMaxBytes          int     `json:"fetch_max_bytes"`
	FetchPartitionMaxBytes int     `json:"fetch_partition_max_bytes"`
	Insecure               bool    `json:"insecure"`
	TLS                    bool    `json:"tls"`
}

func defaultConfig() Config {
	return Config{Host: "127.0.0.1", Truncation: "kip320", MinInsyncReplicas: 1, ReplicaLagTimeMs: 10000,
		ReplicaLagMaxMessages: 4000, ZkSessionTimeoutS: 6, FetchMaxWaitMs: 500, MaxFrame: 8 << 20,
		MaxMessageBytes: 4 << 20, FetchMaxBytes: 4 << 20, FetchPartitionMaxBytes: 1 << 20, Insecure: true}
}

// usage refuses a bad command line or config: one line, exit 2.
func usage(msg string) {
	fmt.Fprintf(os.Stderr, "epochal-go-broker: %s\n", msg)
	os.Exit(2)
}

// parseArgs reads the command line and the config file; a bad one is one line, exit 2.
func parseArgs(args []string) Config {
	cfg := defaultConfig()
	var pos []string
	configPath := ""
	for i := 0; i < len(args); i++ {
		if args[i] == "--config" {
			if i+1 >= len(args) {
				usage("--config needs a file")
			}
			configPath = args[i+1]
			i++
			continue
		}
		pos = append(pos, args[i])
	}
	if len(pos) != 4 {
		usage(fmt.Sprintf("expected ID PORT ZOOKEEPER DATA_DIR [--config CONFIG_JSON], got %d positional arguments", len(pos)))
	}
	if configPath != "" {
		data, err := os.ReadFile(configPath)
		if err != nil {
			usage(fmt.Sprintf("cannot read %s: %v", configPath, err))
		}
		if err := json.Unmarshal(data, &cfg); err != nil {
			usage(fmt.Sprintf("%s is not a broker config: %v", configPath, err))
		}
	}
	var err error
	if cfg.BrokerID, err = strconv.Atoi(pos[0]); err != nil || cfg.BrokerID < 0 {
		usage(fmt.Sprintf("broker id %q is not a non-negative integer", pos[0]))
	}
	if cfg.Port, err = strconv.Atoi(pos[1]); err != nil || cfg.Port <= 0 || cfg.Port > 65535 {
		usage(fmt.Sprintf("port %q is not a TCP port", pos[1]))
	}
	cfg.Zookeeper, cfg.DataDir = pos[2], pos[3]
	if cfg.Truncation == "design" {
		cfg.Truncation = "hw"
	}
	if cfg.Truncation != "kip320" && cfg.Truncation != "hw" {
		usage(fmt.Sprintf("truncation rule %q is not one this port implements (kip320, hw)", cfg.Truncation))
	}
	if !cfg.Insecure || cfg.TLS {
		usage("this port runs only in --insecure clusters without TLS (no SCRAM, no ZooKeeper SASL)")
	}
	return cfg
}

func (c Config) lagTime() time.Duration { return time.Duration(c.ReplicaLagTimeMs) * time.Millisecond }

func (c Config) sessionTimeout() time.Duration {
	return time.Duration(c.ZkSessionTimeoutS * float64(time.Second))
}
