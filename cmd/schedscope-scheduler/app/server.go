// Package app is the schedscope-scheduler command: kube-scheduler with every
// plugin of every profile observed.
package app

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/server"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/term"
	"k8s.io/component-base/version/verflag"
	"k8s.io/klog/v2"
	kubeschedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
	schedulerserverconfig "k8s.io/kubernetes/cmd/kube-scheduler/app/config"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler"
	kubeschedulerconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	"k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedscope/schedscope/pkg/scheduler/metrics"
	"github.com/schedscope/schedscope/pkg/scheduler/observe"
	"github.com/schedscope/schedscope/pkg/scheduler/tracing"
	"github.com/schedscope/schedscope/pkg/stream"
)

// NewSchedulerCommand returns the kube-scheduler command, with all its flags,
// that observes every plugin of every profile. registryOptions add
// out-of-tree plugins, which are observed like in-tree ones.
func NewSchedulerCommand(registryOptions ...kubeschedulerapp.Option) *cobra.Command {
	opts := options.NewOptions()
	recordOpts := NewRecordOptions()

	cmd := &cobra.Command{
		Use: "schedscope-scheduler",
		Long: `schedscope-scheduler is kube-scheduler that records every scheduling decision:
each Filter verdict per node, each Score per node and plugin, the outcome
of every extension point and the time each step took. It runs the profiles
of an ordinary KubeSchedulerConfiguration and decides exactly as
kube-scheduler does with the same configuration.`,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return opts.ComponentGlobalsRegistry.Set()
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCommand(cmd, opts, recordOpts, registryOptions...)
		},
		Args: func(cmd *cobra.Command, args []string) error {
			for _, arg := range args {
				if len(arg) > 0 {
					return fmt.Errorf("%q does not take any arguments, got %q", cmd.CommandPath(), args)
				}
			}
			return nil
		},
	}

	nfs := opts.Flags
	recordOpts.AddFlags(nfs.FlagSet("schedscope"))
	verflag.AddFlags(nfs.FlagSet("global"))
	globalflag.AddGlobalFlags(nfs.FlagSet("global"), cmd.Name(), logs.SkipLoggingConfigurationFlags())
	fs := cmd.Flags()
	for _, f := range nfs.FlagSets {
		fs.AddFlagSet(f)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, *nfs, cols)
	if err := cmd.MarkFlagFilename("config", "yaml", "yml", "json"); err != nil {
		klog.Background().Error(err, "Failed to mark flag filename")
	}
	return cmd
}

func runCommand(cmd *cobra.Command, opts *options.Options, recordOpts *RecordOptions, registryOptions ...kubeschedulerapp.Option) error {
	printVersionAndExitIfRequested(cmd.Flags())
	fg := opts.ComponentGlobalsRegistry.FeatureGateFor(basecompatibility.DefaultKubeComponent)
	if err := logsapi.ValidateAndApply(opts.Logs, fg); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
	cliflag.PrintFlags(cmd.Flags())
	if errs := recordOpts.Validate(); len(errs) > 0 {
		return utilerrors.NewAggregate(errs)
	}
	var tracingConfig *tracing.Config
	if recordOpts.TracingConfigFile != "" {
		var err error
		if tracingConfig, err = tracing.LoadConfig(recordOpts.TracingConfigFile); err != nil {
			return fmt.Errorf("--tracing-config-file: %w", err)
		}
	}
	if err := nameInformers(opts); err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-server.SetupSignalHandler()
		cancel()
	}()

	cc, err := completeConfig(ctx, opts)
	if err != nil {
		return err
	}
	if errs := recordOpts.validateShadows(cc.ComponentConfig.Profiles); len(errs) > 0 {
		return utilerrors.NewAggregate(errs)
	}
	recorder, streamServer, shutdown, err := newRecorder(ctx, cc, recordOpts, tracingConfig)
	if err != nil {
		return err
	}
	defer shutdown()
	sched, err := newScheduler(ctx, opts, cc, recorder, registryOptions...)
	if err != nil {
		return err
	}
	fg.(featuregate.MutableFeatureGate).AddMetrics()
	opts.ComponentGlobalsRegistry.AddMetrics()
	if err := serveStream(ctx, recordOpts, cc, streamServer); err != nil {
		return err
	}
	go recorder.Run(ctx)
	return kubeschedulerapp.Run(ctx, cc, sched)
}

// newRecorder builds the record pipeline: the tracer (when tracingConfig
// is set), the recorder, the stream buffer and server, and the metrics
// that observe them. shutdown flushes the tracer.
func newRecorder(ctx context.Context, cc *schedulerserverconfig.CompletedConfig, recordOpts *RecordOptions, tracingConfig *tracing.Config) (
	recorder *observe.Recorder, streamServer *stream.Server, shutdown func(), err error) {
	var tracer *tracing.Tracer
	shutdown = func() {}
	observeOpts := observe.Options{QueueSize: recordOpts.QueueSize, Shadows: recordOpts.Shadows, ShadowSampleEvery: recordOpts.ShadowSampleEvery}
	if tracingConfig != nil {
		profiles := make([]string, 0, len(cc.ComponentConfig.Profiles))
		for _, p := range cc.ComponentConfig.Profiles {
			profiles = append(profiles, p.SchedulerName)
		}
		if tracer, err = tracing.New(ctx, &tracingConfig.TracingConfiguration, tracing.Options{
			SlowThreshold: recordOpts.SlowAttempt, Traceparent: tracingConfig.Traceparent,
			FollowTraceparentSampling: recordOpts.FollowTraceparentSampling, Profiles: profiles,
			ClusterName: recordOpts.ClusterName, Transport: recordOpts.Transport, Protocol: tracingConfig.Protocol,
		}); err != nil {
			return nil, nil, nil, fmt.Errorf("starting the tracer: %w", err)
		}
		shutdown = func() {
			shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = tracer.Shutdown(shutdownCtx)
		}
		observeOpts.Tracer = tracer
	}
	buffer := stream.NewBuffer(recordOpts.BufferSize, recordOpts.BufferBytes, uuid.NewString())
	streamServer = stream.NewServer(buffer, recordOpts.Bookmark)
	m := metrics.New()
	observeOpts.Sink, observeOpts.OnRecord = buffer, m.ObserveRecord
	recorder = observe.NewRecorder(observeOpts)
	err = metrics.Register(m, metrics.Sources{
		BufferedRecords:       func() float64 { return float64(buffer.Stats().Records) },
		BufferedBytes:         func() float64 { return float64(buffer.Stats().Bytes) },
		EvictedRecords:        func() float64 { return float64(buffer.Stats().Evicted) },
		DroppedRecords:        func() float64 { return float64(recorder.Dropped()) },
		StreamWatchers:        func() float64 { return float64(streamServer.Watchers()) },
		DroppedSpans:          func() float64 { return float64(tracer.DroppedSpans()) },
		FailedSpans:           func() float64 { return float64(tracer.FailedSpans()) },
		SkippedAttempts:       func() float64 { return float64(tracer.SkippedAttempts()) },
		MalformedTraceparents: func() float64 { return float64(tracer.MalformedTraceparents()) },
	})
	if err == nil {
		err = countShadowPods(cc.InformerFactory, recordOpts.Shadows, m)
	}
	if err != nil {
		shutdown()
		return nil, nil, nil, err
	}
	return recorder, streamServer, shutdown, nil
}

// completeConfig is kube-scheduler's configuration from opts, validated.
// With newScheduler, it builds the scheduler as upstream's Setup does
// (testdata/kube-scheduler-setup-*.go.txt, checked by TestSetupUnchanged),
// with what Setup has no option for: the Recorder's event recorder factory.
func completeConfig(ctx context.Context, opts *options.Options) (*schedulerserverconfig.CompletedConfig, error) {
	cfg, err := latest.Default()
	if err != nil {
		return nil, err
	}
	opts.ComponentConfig = cfg
	if errs := opts.Validate(); len(errs) > 0 {
		return nil, utilerrors.NewAggregate(errs)
	}
	c, err := opts.Config(ctx)
	if err != nil {
		return nil, err
	}
	cc := c.Complete()
	return &cc, nil
}

// newScheduler is kube-scheduler's scheduler with its decisions recorded by
// recorder: every plugin of every profile, in-tree or added by
// outOfTreeRegistryOptions, is observed.
func newScheduler(ctx context.Context, opts *options.Options, cc *schedulerserverconfig.CompletedConfig, recorder *observe.Recorder, outOfTreeRegistryOptions ...kubeschedulerapp.Option) (*scheduler.Scheduler, error) {
	outOfTreeRegistry := make(runtime.Registry)
	for _, option := range outOfTreeRegistryOptions {
		if err := option(outOfTreeRegistry); err != nil {
			return nil, err
		}
	}
	if err := checkProfiles(cc.ComponentConfig.Profiles, outOfTreeRegistry); err != nil {
		return nil, err
	}

	completedProfiles := make([]kubeschedulerconfig.KubeSchedulerProfile, 0)
	sched, err := scheduler.New(ctx,
		cc.Client,
		cc.InformerFactory,
		cc.DynInformerFactory,
		recorder.RecorderFactory(recorderFactory(cc)),
		scheduler.WithComponentConfigVersion(cc.ComponentConfig.TypeMeta.APIVersion),
		scheduler.WithKubeConfig(cc.KubeConfig),
		scheduler.WithProfiles(cc.ComponentConfig.Profiles...),
		scheduler.WithPercentageOfNodesToScore(cc.ComponentConfig.PercentageOfNodesToScore),
		scheduler.WithFrameworkOutOfTreeRegistry(outOfTreeRegistry),
		scheduler.WithPodMaxBackoffSeconds(cc.ComponentConfig.PodMaxBackoffSeconds),
		scheduler.WithPodInitialBackoffSeconds(cc.ComponentConfig.PodInitialBackoffSeconds),
		scheduler.WithPodMaxInUnschedulablePodsDuration(cc.PodMaxInUnschedulablePodsDuration),
		scheduler.WithExtenders(cc.ComponentConfig.Extenders...),
		scheduler.WithParallelism(cc.ComponentConfig.Parallelism),
		scheduler.WithBuildFrameworkCapturer(func(profile kubeschedulerconfig.KubeSchedulerProfile) {
			completedProfiles = append(completedProfiles, profile)
		}),
	)
	if err != nil {
		return nil, err
	}
	if err := recorder.Install(sched); err != nil {
		return nil, err
	}
	if err := options.LogOrWriteConfig(klog.FromContext(ctx), opts.WriteConfigTo, &cc.ComponentConfig, completedProfiles); err != nil {
		return nil, err
	}
	return sched, nil
}
