import { ApiError } from '@ziti/contracts';

/** 400 INVALID_FILTER with the reference's `{code:"UNHANDLED", message}` cause. */
export function invalidFilter(message: string): ApiError {
  return new ApiError('INVALID_FILTER', { code: 'UNHANDLED', message });
}

export function invalidSort(message: string): ApiError {
  return new ApiError('INVALID_SORT_IDENTIFIER', { code: 'UNHANDLED', message });
}

export function invalidPagination(message: string): ApiError {
  return new ApiError('INVALID_PAGINATION', { code: 'UNHANDLED', message });
}

/**
 * The syntax-error text of the reference (storage `zitiql/util.go`): line is 1-based, column is the
 * 0-based character position in the line (ANTLR's `charPositionInLine`).
 */
export function syntaxErrorMessage(symbol: string, line: number, column: number): string {
  return `Unexpected symbol: "${symbol}" at line: ${line} column: ${column}. line: ${line}, column: ${column}, symbol: ${symbol}`;
}

export function isApiError(value: unknown): value is ApiError {
  return value instanceof ApiError;
}
