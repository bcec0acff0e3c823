// SPDX-License-Identifier: MIT
/* cli_topology.c: the cost-model override flags shared by `opt` and `diff`,
 * and the --memory-budget `opt` and `explain` share. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

const char dt_cli_topology_help[] =
	"cost model (semantics §5; each flag overrides the graph's <topology>,\n"
	"whose attributes have the same names, or DTensor's default):\n"
	"      --devices-per-host=N   devices per host; a mesh dim whose cumulative\n"
	"                             device count (from the last dim) exceeds N is\n"
	"                             inter-host (default 8)\n"
	"      --bandwidth=GBPS       intra-host bandwidth per hop, GB/s (87.7)\n"
	"      --latency=US           intra-host latency per hop, µs (0.6)\n"
	"      --inter-host-bandwidth-factor=F\n"
	"                             inter-host bandwidth = bandwidth × F (0.22)\n"
	"      --inter-host-latency=US  inter-host latency per hop, µs (2.7)\n"
	"      --base-latency=US      fixed cost of every collective, µs (6.6)\n"
	"      --all-to-all-penalty=US  added to every all_to_all, µs (1.0)\n"
	"      --device-tflops=T      a device's compute, TFLOP/s, for the\n"
	"                             whole-graph search's compute costs (400)\n"
	"      --device-bandwidth=GBPS  a device's memory bandwidth, GB/s (2000)\n";

int dt_cli_memory_budget_parse(const char *value, const char *cmd,
				int64_t *budget)
{
	char *end;
	*budget = strtoll(value, &end, 10);
	if (!*value || *end || *budget <= 0)
		return dt_usage_error(cmd, "--memory-budget needs a positive "
				      "byte count, not '%s'", value);
	return DT_EXIT_OK;
}

static const char *const flag_names[] = {
	"devices-per-host", "bandwidth", "latency", "inter-host-bandwidth-factor",
	"inter-host-latency", "base-latency", "all-to-all-penalty",
	"device-tflops", "device-bandwidth",
};

int dt_cli_topology_parse(struct dt_cli_topology *o, int opt,
			  const char *value, const char *cmd)
{
	DT_REQUIRE(opt >= DT_CLI_OPT_TOPOLOGY_FIRST &&
		   opt < DT_CLI_OPT_TOPOLOGY_END);
	int index = opt - DT_CLI_OPT_TOPOLOGY_FIRST;
	char *end;
	errno = 0;
	if (opt == DT_CLI_OPT_DEVICES_PER_HOST) {
		long long n = strtoll(value, &end, 10);
		if (end == value || *end || errno || n <= 0)
			return dt_usage_error(cmd, "--devices-per-host needs a "
					      "positive integer, not '%s'", value);
		o->values.devices_per_host = n;
	} else {
		double v = strtod(value, &end);
		if (end == value || *end ||
		    !(v >= DT_TOPOLOGY_MIN && v <= DT_TOPOLOGY_MAX))
			return dt_usage_error(cmd, "--%s needs a number from %g "
					      "to %g, not '%s'",
					      flag_names[index], DT_TOPOLOGY_MIN,
					      DT_TOPOLOGY_MAX, value);
		double *field[] = {
			[DT_CLI_OPT_BANDWIDTH - DT_CLI_OPT_TOPOLOGY_FIRST] =
				&o->values.bandwidth,
			[DT_CLI_OPT_LATENCY - DT_CLI_OPT_TOPOLOGY_FIRST] =
				&o->values.latency,
			[DT_CLI_OPT_INTER_HOST_BANDWIDTH_FACTOR -
			 DT_CLI_OPT_TOPOLOGY_FIRST] =
				&o->values.inter_host_bandwidth_factor,
			[DT_CLI_OPT_INTER_HOST_LATENCY - DT_CLI_OPT_TOPOLOGY_FIRST] =
				&o->values.inter_host_latency,
			[DT_CLI_OPT_BASE_LATENCY - DT_CLI_OPT_TOPOLOGY_FIRST] =
				&o->values.base_latency,
			[DT_CLI_OPT_ALL_TO_ALL_PENALTY - DT_CLI_OPT_TOPOLOGY_FIRST] =
				&o->values.all_to_all_penalty,
			[DT_CLI_OPT_DEVICE_TFLOPS - DT_CLI_OPT_TOPOLOGY_FIRST] =
				&o->values.device_tflops,
			[DT_CLI_OPT_DEVICE_BANDWIDTH - DT_CLI_OPT_TOPOLOGY_FIRST] =
				&o->values.device_bandwidth,
		};
		*field[index] = v;
	}
	o->given |= 1u << index;
	return DT_EXIT_OK;
}

static bool given(const struct dt_cli_topology *o, int opt)
{
	return o->given & (1u << (opt - DT_CLI_OPT_TOPOLOGY_FIRST));
}

void dt_cli_topology_apply(const struct dt_cli_topology *o,
			   struct dt_topology *t)
{
	const struct dt_topology *v = &o->values;
	if (given(o, DT_CLI_OPT_DEVICES_PER_HOST))
		t->devices_per_host = v->devices_per_host;
	if (given(o, DT_CLI_OPT_BANDWIDTH))
		t->bandwidth = v->bandwidth;
	if (given(o, DT_CLI_OPT_LATENCY))
		t->latency = v->latency;
	if (given(o, DT_CLI_OPT_INTER_HOST_BANDWIDTH_FACTOR))
		t->inter_host_bandwidth_factor = v->inter_host_bandwidth_factor;
	if (given(o, DT_CLI_OPT_INTER_HOST_LATENCY))
		t->inter_host_latency = v->inter_host_latency;
	if (given(o, DT_CLI_OPT_BASE_LATENCY))
		t->base_latency = v->base_latency;
	if (given(o, DT_CLI_OPT_ALL_TO_ALL_PENALTY))
		t->all_to_all_penalty = v->all_to_all_penalty;
	if (given(o, DT_CLI_OPT_DEVICE_TFLOPS))
		t->device_tflops = v->device_tflops;
	if (given(o, DT_CLI_OPT_DEVICE_BANDWIDTH))
		t->device_bandwidth = v->device_bandwidth;
}
