/**
 * The Reflect metadata API that @peculiar/x509's dependency injection (tsyringe) checks for as it loads.
 * A module of its own, imported before @peculiar/x509: reflect-metadata is CommonJS, which a bundle runs
 * where its importer's body runs, after the ES modules it hoisted — tsyringe among them — when the import
 * sits beside @peculiar/x509's in one file (docs/RUNTIMES.md "The forward proxy").
 */
import "reflect-metadata";
